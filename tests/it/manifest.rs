//! The manifest layer: the shipped manifests load with the expected counts, layering
//! precedence, the content hash, and diagnostics for bad input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tbb::family::FamilySet;
use tbb::harness::Menu;
use tbb::manifest::{Manifest, ManifestError, Schedule};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn families() -> &'static FamilySet {
    static SET: OnceLock<FamilySet> = OnceLock::new();
    SET.get_or_init(|| match FamilySet::load(&root().join("families")) {
        Ok(set) => set,
        Err(e) => panic!("{:?}", miette::Report::new(e)),
    })
}

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load_at(
    path: &Path,
    overrides: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Result<Manifest, ManifestError> {
    Manifest::load_with_env(path, families(), &sets(overrides), &sets(env))
}

fn load(path: &Path) -> Manifest {
    match load_at(path, &[], &[]) {
        Ok(l) => l,
        Err(e) => panic!("{}", render(&e)),
    }
}

fn shipped(name: &str) -> PathBuf {
    root().join("manifests").join(name)
}

/// A copy of a shipped manifest, edited, beside a copy of the catalogue.
struct Edited {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn edited(name: &str, edit: impl Fn(String) -> String) -> Edited {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        shipped("configurations.toml"),
        dir.path().join("configurations.toml"),
    )
    .unwrap();
    let text = std::fs::read_to_string(shipped(name)).unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, edit(text)).unwrap();
    Edited { _dir: dir, path }
}

fn replace(text: String, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` is not in the manifest");
    text.replacen(from, to, 1)
}

fn render(e: &ManifestError) -> String {
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(200)
        .render_report(&mut out, e)
        .unwrap();
    out
}

fn failure(m: &Edited, overrides: &[(&str, &str)]) -> (ManifestError, String) {
    match load_at(&m.path, overrides, &[]) {
        Ok(_) => panic!("the manifest loaded"),
        Err(e) => {
            let text = render(&e);
            (e, text)
        }
    }
}

#[test]
fn the_capacity_manifest_is_the_capacity_factorial() {
    let m = load(&shipped("capacity.toml"));
    assert_eq!(m.study, "capacity");
    assert_eq!(m.families.len(), 36);
    assert_eq!(m.cells, tbb::compile::cell::Cell::capacity());
    assert_eq!(m.configurations.len(), 21);
    assert!(m.configurations.iter().all(|c| c.name.starts_with("sim-")));
    assert_eq!(m.menus(), vec![Menu::Routed, Menu::Fixed]);
    let arms: Vec<&str> = m.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(arms, ["routed", "fixed"]);
    assert_eq!(m.forms().len(), 2);
    assert_eq!(m.blocks.len(), 1);
    assert_eq!(m.blocks[0].completion_caps, vec![1024]);
    assert_eq!(m.budgets.episode_budget, 128_000);
    assert_eq!(m.blocks[0].repeats, 1);
    assert_eq!(m.episode_count(), 18_144);
    let kinds: Vec<_> = m.analyses.iter().map(|a| a.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "contrasts",
            "truncation",
            "strata",
            "lanes",
            "costs",
            "configurations",
            "interaction_anatomy",
            "first_responses",
            "decoders",
            "repeats",
            "report"
        ]
    );
    assert_eq!(m.analyses[0].params["draws"], 10_000);
    assert_eq!(m.families.len() * m.cells.len(), 432);
    assert_eq!(m.episode_count(), 18_144);
}

/// The frontier study: the 4 frontier families at depths 2, 6, 14 and 30 under the
/// frozen contract, the whole simulated panel, the baseline arm only.
#[test]
fn the_frontier_manifest_runs_the_four_depths_under_the_frozen_contract() {
    let m = load(&shipped("frontier.toml"));
    assert_eq!(m.study, "frontier");
    assert_eq!(m.families.len(), 4);
    let depths: Vec<Option<u8>> = m.cells.iter().map(|c| c.depth).collect();
    assert_eq!(depths, [Some(2), Some(6), Some(14), Some(30)]);
    assert_eq!(m.configurations.len(), 21);
    assert_eq!(m.menus(), vec![Menu::Routed]);
    assert_eq!(m.blocks[0].completion_caps, vec![1024]);
    assert_eq!(m.budgets.episode_budget, 128_000);
    assert_eq!(m.episode_count(), 336);
    let kinds: Vec<_> = m.analyses.iter().map(|a| a.kind.name()).collect();
    assert_eq!(kinds, ["frontier", "report"]);
    // The analysis measures the budget the manifest sets.
    assert_eq!(m.analyses[0].params["episode_budget"], 128_000);
    assert!(m.skipped_analyses().is_empty());
}

#[test]
fn the_pilot_manifest_runs_a_probe_seven_restarts_and_a_retry_as_its_own_repeat() {
    let m = load(&shipped("pilot.toml"));
    assert_eq!(m.families.len(), 24);
    let blocks: Vec<(&str, u32, u32, usize)> = m
        .blocks
        .iter()
        .map(|b| {
            (
                b.name.as_str(),
                b.first_repeat,
                b.repeats,
                b.configurations.len(),
            )
        })
        .collect();
    assert_eq!(
        blocks,
        [
            ("restarts", 0, 1, 8),
            ("retry", 1, 1, 8),
            ("switch", 0, 1, 1)
        ]
    );
    assert_eq!(m.blocks[1].repeat_range().collect::<Vec<_>>(), [1]);
    assert_eq!(m.episode_count(), 192 * 6 + 192 + 24);
    assert!(m.skipped_analyses().is_empty());
    // Without its first repeat the retry would rerun the probe's own episodes.
    let same = edited("pilot.toml", |t| replace(t, "first_repeat = 1\n", ""));
    let (_, text) = failure(&same, &[]);
    assert!(
        text.contains("repeats an episode of block `restarts`"),
        "{text}"
    );
    let negative = edited("pilot.toml", |t| {
        replace(t, "first_repeat = 1", "first_repeat = -1")
    });
    let (_, text) = failure(&negative, &[]);
    assert!(
        text.contains("repeat index -1 is out of range: it must be from 0 to 1000000"),
        "{text}"
    );
    // A switch the catalogue has but the study does not run skips the analysis.
    let unrun = edited("pilot.toml", |t| {
        replace(
            t,
            "switch = \"sim-dunlin-max\"",
            "switch = \"sim-gale-large\"",
        )
    });
    let m = load(&unrun.path);
    let skipped = m.skipped_analyses();
    assert!(
        skipped
            .iter()
            .any(|(_, why)| why.contains("`sim-gale-large`")),
        "{skipped:?}"
    );
}

/// Every name an analysis takes is resolved when the manifest loads, at its span, with
/// "did you mean": found after the episodes ran, it would cost the whole study.
#[test]
fn an_analysis_naming_an_arm_or_configuration_the_study_lacks_is_refused_at_check_time() {
    for (baseline, needle) in [
        ("", "unknown arm ``"),
        ("bogus", "unknown arm `bogus`"),
        ("fixd", "did you mean `fixed`?"),
    ] {
        let m = edited("repairs.toml", |t| {
            replace(
                t,
                "{ arm = \"workflow\", baseline = \"fixed\"",
                &format!("{{ arm = \"workflow\", baseline = \"{baseline}\""),
            )
        });
        let (e, text) = failure(&m, &[]);
        assert_eq!(e.problems().len(), 1, "{text}");
        assert!(text.contains(needle), "{needle} missing in\n{text}");
        // The report points into the switches table's line.
        assert!(text.contains("arm = \"workflow\", baseline"), "{text}");
    }
    for (edit, needle) in [
        (
            ("actions = [\"cap4096\"", "actions = [\"\""),
            "unknown arm ``",
        ),
        (
            ("actions = [\"cap4096\"", "actions = [\"\u{feff}cap4096\""),
            "unknown arm `\\u{feff}cap4096`",
        ),
        (
            ("probe = \"probe\"", "probe = \"prob\""),
            "did you mean `probe`?",
        ),
        (
            (
                "switch = \"sim-dunlin-max\"",
                "switch = \"sim-dunlin-maxx\"",
            ),
            "did you mean `sim-dunlin-max`?",
        ),
    ] {
        let m = edited("pilot.toml", |t| replace(t, edit.0, edit.1));
        let (e, text) = failure(&m, &[]);
        assert_eq!(e.problems().len(), 1, "{text}");
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
    let m = edited("holdout.toml", |t| {
        replace(t, "\"sim-gale-large\"", "\"sim-gale-larg\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("did you mean `sim-gale-large`?"), "{text}");
}

/// The decoders read one completion cap: the study's own when it runs one, any other
/// cap a study runs when named; a study of several caps must name one.
#[test]
fn the_decoders_take_the_study_s_cap_or_are_refused_at_check_time() {
    let capacity = edited("capacity.toml", |t| t);
    if let Err(e) = load_at(
        &capacity.path,
        &[("budgets.completion_caps", "[2048]")],
        &[],
    ) {
        panic!("{}", render(&e));
    }
    let (e, text) = failure(&capacity, &[("budgets.completion_caps", "[1024, 2048]")]);
    assert_eq!(e.problems().len(), 1, "{text}");
    assert!(text.contains("runs 2 completion caps"), "{text}");
    assert!(
        text.contains("set `completion_cap` to one of 1024, 2048"),
        "{text}"
    );
    let named = edited("capacity.toml", |t| {
        replace(
            t,
            "kind = \"decoders\"\n",
            "kind = \"decoders\"\ncompletion_cap = 4096\nlane = \"fixd\"\n",
        )
    });
    let (e, text) = failure(&named, &[]);
    assert_eq!(e.problems().len(), 2, "{text}");
    assert!(
        text.contains("runs no episode at completion cap 4096"),
        "{text}"
    );
    assert!(text.contains("did you mean `fixed`?"), "{text}");
}

/// `tbb plan` shows which units each switch comparison uses; the routed menu's stressed
/// cells are the endpoint cells at V = 128 (R low), not the router's R-high block.
#[test]
fn the_switch_comparisons_use_the_units_their_filters_name() {
    let m = load(&shipped("repairs.toml"));
    let Some(switches) = m.analyses.iter().find(|a| a.kind.name() == "switches") else {
        panic!("repairs runs switches")
    };
    let design = m.design();
    let units = switches.kind.kind().units(&switches.params, &design);
    assert_eq!(units.len(), 4, "{units:?}");
    assert!(
        units[0].starts_with("repair `routed` against switches from `fixed`: 144 conditions per configuration pair (4 stressed cells { v = 128, r = \"low\" })"),
        "{units:?}"
    );
    let wide = edited("repairs.toml", |t| {
        replace(
            t,
            "stressed = { v = 128, r = \"low\" }",
            "stressed = { v = 128 }",
        )
    });
    let m = load(&wide.path);
    let design = m.design();
    let Some(switches) = m.analyses.iter().find(|a| a.kind.name() == "switches") else {
        panic!("repairs runs switches")
    };
    let units = switches.kind.kind().units(&switches.params, &design);
    assert!(
        units[0].contains(": 180 conditions per configuration pair (5 stressed cells"),
        "{units:?}"
    );
}

/// Every (family, cell, configuration) an arm runs on, over the blocks that list it.
fn conditions_of(m: &Manifest, arm: &str) -> BTreeSet<(String, String, String)> {
    let Some(index) = m.arms.iter().position(|a| a.name == arm) else {
        panic!("no arm {arm}")
    };
    let mut out = BTreeSet::new();
    for b in m.blocks.iter().filter(|b| b.arms.contains(&index)) {
        for f in &b.families {
            for c in &b.cells {
                for k in &b.configurations {
                    out.insert((f.clone(), c.to_string(), k.clone()));
                }
            }
        }
    }
    out
}

/// The repairs study: the no-repair arm (fixed menu, base prompt) and one repair per
/// layer, each changing one component, on the eight endpoint cells; every repair runs
/// on exactly the conditions of every other, so each is the others' wrong-layer
/// control on the same cells.
#[test]
fn the_repairs_manifest_runs_every_wrong_layer_control_on_its_repairs_cells() {
    use tbb::harness::{ArmForm, PromptVariant};
    let m = load(&shipped("repairs.toml"));
    let forms: Vec<(&str, ArmForm)> = m.arms.iter().map(|a| (a.name.as_str(), a.form)).collect();
    let fixed = ArmForm {
        menu: Menu::Fixed,
        ..ArmForm::baseline()
    };
    assert_eq!(
        forms,
        [
            ("fixed", fixed),
            ("routed", ArmForm::baseline()),
            (
                "workflow",
                ArmForm {
                    prompt: PromptVariant::Workflow,
                    ..fixed
                }
            ),
            (
                "guide",
                ArmForm {
                    prompt: PromptVariant::InterfaceGuide,
                    ..fixed
                }
            ),
            (
                "router",
                ArmForm {
                    menu: Menu::Router,
                    ..fixed
                }
            ),
        ]
    );
    // The eight endpoint cells, at both levels of V, W and D, and (8, low, raw) at R
    // high, the router's stressed cell.
    let capacity = tbb::compile::cell::Cell::capacity();
    let r_high_cell = tbb::compile::cell::Cell {
        r: tbb::compile::cell::Routing::High,
        ..capacity[4]
    };
    let mut cells = capacity[..8].to_vec();
    cells.push(r_high_cell);
    assert_eq!(m.cells, cells);
    assert_eq!(m.families.len(), 36);
    assert_eq!(m.configurations.len(), 21);
    // The endpoints × 4 arms, the router at R low, 5 arms at R high.
    assert_eq!(m.episode_count(), 36 * 21 * (8 * 4 + 1 + 5));
    let base = conditions_of(&m, "fixed");
    assert_eq!(base.len(), 36 * 21 * 9);
    for arm in ["routed", "workflow", "guide"] {
        assert_eq!(conditions_of(&m, arm), base, "{arm}");
    }
    // The router runs at both routing levels of (8, low, raw), on conditions the
    // no-repair arm and the other repairs (its wrong-layer controls) run too.
    let router = conditions_of(&m, "router");
    assert_eq!(router.len(), 36 * 21 * 2);
    let r_high: BTreeSet<_> = router
        .iter()
        .filter(|c| c.1 == r_high_cell.to_string())
        .cloned()
        .collect();
    assert_eq!(r_high.len(), 36 * 21);
    assert!(r_high.is_subset(&base));
    assert!(router.is_subset(&base), "its R-low cell is an endpoint too");
    let kinds: Vec<_> = m.analyses.iter().map(|a| a.kind.name()).collect();
    assert_eq!(kinds, ["repairs", "switches", "costs", "report"]);
}

/// The sentinel repeats: each layer's pair (the no-repair arm and its repair) on that
/// layer's single-stress cell, three runs each, 4 families of 4 domains, every
/// configuration of the panel.
#[test]
fn the_sentinel_manifest_runs_three_pairs_three_times() {
    let m = load(&shipped("sentinel.toml"));
    assert_eq!(m.families.len(), 4);
    assert_eq!(m.configurations.len(), 21);
    let blocks: Vec<(&str, Vec<&str>, String, u32)> = m
        .blocks
        .iter()
        .map(|b| {
            let arms = b.arms.iter().map(|&i| m.arms[i].name.as_str()).collect();
            let cells: Vec<String> = b.cells.iter().map(|c| c.to_string()).collect();
            (b.name.as_str(), arms, cells.join(" "), b.repeats)
        })
        .collect();
    let cell = |v: u16, w: &str, d: &str| {
        tbb::compile::cell::Cell {
            v,
            w: w.parse().unwrap_or_else(|_| panic!("{w}")),
            d: d.parse().unwrap_or_else(|_| panic!("{d}")),
            r: tbb::compile::cell::Routing::Low,
            depth: None,
        }
        .to_string()
    };
    assert_eq!(
        blocks,
        [
            ("v", vec!["fixed", "routed"], cell(128, "low", "raw"), 3),
            ("w", vec!["fixed", "workflow"], cell(8, "high", "raw"), 3),
            ("d", vec!["fixed", "guide"], cell(8, "low", "linked"), 3),
        ]
    );
    // 4 families × 3 pairs × 2 arms × 21 configurations = 504 groups, 3 runs each.
    assert_eq!(m.episode_count(), 504 * 3);
}

/// The cap studies: the capacity factorial on the routed menu at two caps, twice; the
/// sweep's caps side by side, the crossover's in a counterbalanced order; each reads
/// the capacity study's two tables.
#[test]
fn the_cap_study_manifests_are_the_papers_designs() {
    for (file, caps, schedule, configurations, episodes, strata) in [
        (
            "sweep.toml",
            [1024, 16_384],
            Schedule::Concurrent,
            8,
            13_824,
            "sweep_strata",
        ),
        (
            "crossover.toml",
            [1024, 4096],
            Schedule::Counterbalanced,
            4,
            6_912,
            "crossover_strata",
        ),
    ] {
        let m = load(&shipped(file));
        assert_eq!(m.menus(), vec![Menu::Routed], "{file}");
        assert_eq!(m.blocks[0].completion_caps, caps.to_vec(), "{file}");
        assert_eq!(m.blocks[0].repeats, 2, "{file}");
        assert_eq!(m.blocks[0].schedule, schedule, "{file}");
        assert_eq!(m.configurations.len(), configurations, "{file}");
        assert_eq!(m.families.len() * m.cells.len(), 432, "{file}");
        assert_eq!(m.episode_count(), episodes, "{file}");
        assert_eq!(m.budgets.episode_budget, 128_000, "{file}");
        let first = &m.analyses[0];
        assert_eq!(first.kind.name(), strata, "{file}");
        let from: Vec<(&str, &str)> = first
            .inputs
            .iter()
            .map(|(t, s)| (t.as_str(), s.as_str()))
            .collect();
        assert_eq!(
            from,
            [
                ("contrasts_by_configuration", "capacity"),
                ("truncation", "capacity")
            ],
            "{file}"
        );
    }
}

#[test]
fn the_smoke_manifest_is_small_but_covers_four_intents() {
    let m = load(&shipped("smoke.toml"));
    assert_eq!(m.families.len(), 6);
    let intents: BTreeSet<&str> = m
        .families
        .iter()
        .map(|f| families().get(f).unwrap().intent.name())
        .collect();
    assert!(intents.len() >= 4, "{intents:?}");
    let configs: Vec<&str> = m.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(configs, ["sim-aurora-flash", "sim-dunlin-max"]);
    assert_eq!(m.cells.len(), 12);
    assert_eq!(m.analyses.len(), 10);
    assert_eq!(m.analyses[0].params["draws"], 1000);
    assert_eq!(m.analyses[8].kind.name(), "switches");
    assert_eq!(m.episode_count(), 6 * 12 * 2 * 2);
}

#[test]
fn the_content_hash_ignores_comments_and_layout_but_not_parameters() {
    let original = load(&shipped("capacity.toml")).content_hash;
    let reformatted = edited("capacity.toml", |t| {
        t.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(|l| format!("{}\n\n", l.replace(" = ", "=")))
            .collect()
    });
    assert_eq!(load(&reformatted.path).content_hash, original);
    let changed = edited("capacity.toml", |t| {
        replace(t, "completion_caps = [1024]", "completion_caps = [4096]")
    });
    let by_file = load(&changed.path).content_hash;
    assert_ne!(by_file, original);
    let by_set = load_at(
        &shipped("capacity.toml"),
        &[("budgets.completion_caps", "[4096]")],
        &[],
    )
    .unwrap()
    .content_hash;
    assert_eq!(by_set, by_file, "the hash is of the resolved manifest");
}

#[test]
fn overrides_take_precedence_file_then_env_then_set() {
    let path = shipped("smoke.toml");
    let m = |sets: &[(&str, &str)], env: &[(&str, &str)]| load_at(&path, sets, env).unwrap();
    assert_eq!(m(&[], &[]).blocks[0].repeats, 1);
    assert_eq!(m(&[], &[("TBB_REPEATS", "2")]).blocks[0].repeats, 2);
    assert_eq!(
        m(&[("repeats", "3")], &[("TBB_REPEATS", "2")]).blocks[0].repeats,
        3
    );
    let env = m(&[], &[("TBB_BUDGETS__EPISODE_BUDGET", "64000")]);
    assert_eq!(env.budgets.episode_budget, 64_000);
    assert_eq!(
        env.blocks[0].completion_caps,
        vec![1024],
        "siblings keep the file's values"
    );
    let set = m(&[("budgets.completion_caps", "[4096, 8192]")], &[]);
    assert_eq!(set.blocks[0].completion_caps, vec![4096, 8192]);
    assert_eq!(set.episode_count(), 288 * 2);
    // Other TBB_ variables belong to the command line, not the manifest.
    assert_eq!(
        m(&[], &[("TBB_FAMILIES", "elsewhere")]).blocks[0].repeats,
        1
    );
}

/// Set in the environment of the child run of
/// `load_reads_tbb_variables_from_the_process_environment`: the child checks, the
/// parent only starts it. Not a `TBB_` name, which the manifest would refuse.
const CHILD_RUN: &str = "MANIFEST_TEST_CHILD_RUN";

/// The variable is set in a child run of this one test, never in this process: every
/// module of the test binary shares this process's environment, and a `TBB_REPEATS`
/// inherited by another test's `tbb` would change its study.
#[test]
fn load_reads_tbb_variables_from_the_process_environment() {
    if std::env::var_os(CHILD_RUN).is_none() {
        let this_test = format!(
            "{}::load_reads_tbb_variables_from_the_process_environment",
            module_path!().split_once("::").map_or("", |(_, m)| m)
        );
        let me = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new(me)
            .args([this_test.as_str(), "--exact", "--test-threads=1"])
            .env(CHILD_RUN, "1")
            .env("TBB_REPEATS", "2")
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the child run of {this_test}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let with_env = Manifest::load(&shipped("smoke.toml"), families(), &[]);
    let with_set = Manifest::load(
        &shipped("smoke.toml"),
        families(),
        &sets(&[("repeats", "4")]),
    );
    assert_eq!(with_env.unwrap().blocks[0].repeats, 2);
    assert_eq!(with_set.unwrap().blocks[0].repeats, 4);
}

#[test]
fn an_impossible_menu_size_points_at_its_value() {
    let m = edited("smoke.toml", |t| {
        replace(
            t,
            "preset = \"capacity\"",
            "[[cells.list]]\nv = 7\nw = \"high\"\nd = \"linked\"",
        )
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problems().len(), 1, "{text}");
    assert!(text.contains("smoke.toml"), "{text}");
    assert!(text.contains("v = 7"), "{text}");
    assert!(text.contains("V must be one of 8, 32, 128"), "{text}");
}

#[test]
fn an_unknown_configuration_gets_did_you_mean() {
    let m = edited("smoke.toml", |t| {
        replace(t, "\"sim-dunlin-max\"", "\"sim-dunlin-mx\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(
        text.contains("unknown configuration `sim-dunlin-mx`"),
        "{text}"
    );
    assert!(
        text.contains("names = [\"sim-aurora-flash\", \"sim-dunlin-mx\"]"),
        "{text}"
    );
    assert!(text.contains("did you mean `sim-dunlin-max`?"), "{text}");
}

#[test]
fn an_unknown_family_gets_did_you_mean() {
    let m = edited("smoke.toml", |t| {
        replace(t, "\"retention-purge-aurora\"", "\"retention-purge-arora\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(
        text.contains("unknown family `retention-purge-arora`"),
        "{text}"
    );
    assert!(
        text.contains("\"retention-purge-arora\",          # file"),
        "{text}"
    );
    assert!(
        text.contains("did you mean `retention-purge-aurora`?"),
        "{text}"
    );
}

#[test]
fn an_unknown_analysis_kind_gets_did_you_mean() {
    let m = edited("smoke.toml", |t| {
        replace(t, "kind = \"strata\"", "kind = \"stratta\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("unknown analysis kind `stratta`"), "{text}");
    assert!(text.contains("kind = \"stratta\""), "{text}");
    assert!(text.contains("did you mean `strata`?"), "{text}");
}

#[test]
fn analysis_parameters_are_typed_per_kind_and_checked_at_their_spans() {
    // Unknown to its kind: did-you-mean among that kind's parameters.
    let m = edited("smoke.toml", |t| replace(t, "draws = 1000", "drawz = 1000"));
    let (_, text) = failure(&m, &[]);
    assert!(
        text.contains("unknown parameter of the contrasts analysis `drawz`"),
        "{text}"
    );
    assert!(text.contains("drawz = 1000"), "{text}");
    assert!(text.contains("did you mean `draws`?"), "{text}");
    // A parameter of another kind: this kind takes none.
    let m = edited("smoke.toml", |t| {
        replace(t, "kind = \"costs\"", "kind = \"costs\"\nseed = 3")
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problem_count(), 1, "{text}");
    assert!(
        text.contains("the costs analysis takes no parameters"),
        "{text}"
    );
    // A wrong type and an out-of-range value, each at its value.
    let m = edited("smoke.toml", |t| {
        let t = replace(t, "draws = 1000", "draws = 0");
        replace(
            t,
            "cluster_units = [\"family\", \"intent\", \"configuration\"]",
            "cluster_units = [\"family\", \"famly\"]",
        )
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problem_count(), 1, "serde stops at the first: {text}");
    assert!(
        text.contains(
            "`cluster_units.1` of the contrasts analysis is invalid: unknown variant `famly`"
        ),
        "{text}"
    );
    assert!(text.contains("╰── here"), "{text}");
    let m = edited("smoke.toml", |t| replace(t, "draws = 1000", "draws = 0"));
    let (_, text) = failure(&m, &[]);
    assert!(
        text.contains("draws = 0 must be a positive integer"),
        "{text}"
    );
    assert!(text.contains("╰── here"), "{text}");
}

#[test]
fn malformed_toml_points_at_the_line() {
    let m = edited("smoke.toml", |t| replace(t, "repeats = 1", "repeats = = 1"));
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("smoke.toml"), "{text}");
    assert!(text.contains("is not valid TOML"), "{text}");
    assert!(text.contains("repeats = = 1"), "{text}");
    assert!(text.contains("see manifests/capacity.toml"), "{text}");
}

/// The `[budgets]` table of smoke.toml moved to the top as a TOML 1.1 inline table:
/// over several lines, with a trailing comma, and `extra` inside it.
fn budgets_over_lines(text: String, extra: &str) -> String {
    let text = replace(
        text,
        "[budgets]\ncompletion_caps = [1024]\nepisode_budget = 128000\ncall_slack = 2\n",
        "",
    );
    replace(
        text,
        "repeats = 1\n",
        &format!(
            "repeats = 1\nbudgets = {{\n  completion_caps = [1024],\n  episode_budget = 128000,\n  call_slack = 2,{extra}\n}}\n"
        ),
    )
}

#[test]
fn a_toml_1_1_manifest_loads_and_its_problems_point_into_it() {
    // Regression: the manifest was read as TOML 1.1 but its spans were indexed by a
    // TOML 1.0 parser, which refused an inline table over several lines as invalid TOML.
    let original = load(&shipped("smoke.toml")).content_hash;
    let inline = edited("smoke.toml", |t| budgets_over_lines(t, ""));
    assert_eq!(load(&inline.path).content_hash, original);
    let with_typo = edited("smoke.toml", |t| {
        budgets_over_lines(t, "\n  episode_budgt = 5,")
    });
    let (e, text) = failure(&with_typo, &[]);
    assert_eq!(e.problems().len(), 1, "{text}");
    assert!(text.contains("unknown key `episode_budgt`"), "{text}");
    assert!(text.contains("episode_budgt = 5,"), "{text}");
}

#[test]
fn a_value_of_the_wrong_type_points_at_it() {
    let m = edited("smoke.toml", |t| {
        replace(t, "repeats = 1", "repeats = \"one\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("does not fit the manifest schema"), "{text}");
    assert!(text.contains("repeats = \"one\""), "{text}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let m = edited("smoke.toml", |t| {
        let t = replace(t, "\"sim-dunlin-max\"", "\"sim-dunlin-mx\"");
        let t = replace(t, "kind = \"costs\"", "kind = \"cost\"");
        let t = replace(t, "call_slack = 2", "call_slack = 3");
        replace(t, "menu = \"fixed\"", "menu = \"fixd\"")
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problems().len(), 4, "{text}");
    assert!(text.contains("4 problem(s)"), "{text}");
    for needle in [
        "did you mean `sim-dunlin-max`?",
        "did you mean `costs`?",
        "did you mean `fixed`?",
        "call slack 3 is not supported: it must be 2 calls",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
}

#[test]
fn an_unknown_key_is_an_error_at_its_span_with_did_you_mean() {
    let m = edited("smoke.toml", |t| {
        let t = replace(t, "repeats = 1", "repeets = 1");
        replace(
            t,
            "episode_budget = 128000",
            "episode_budget = 128000\nepisode_budgt = 5",
        )
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problems().len(), 2, "{text}");
    for needle in [
        "unknown key `repeets`",
        "did you mean `repeats`?",
        "unknown key `episode_budgt`",
        "did you mean `episode_budget`?",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
    // At the span: the report quotes the offending line.
    assert!(text.contains("episode_budgt = 5"), "{text}");
    let (_, set) = failure(&edited("smoke.toml", |t| t), &[("budgets.extra", "1")]);
    assert!(
        set.contains("--set budgets.extra: unknown key `extra`"),
        "{set}"
    );
}

#[test]
fn an_unknown_tbb_variable_is_an_error_naming_the_known_ones() {
    let path = shipped("smoke.toml");
    let e = load_at(&path, &[], &[("TBB_REPEETS", "2")]).unwrap_err();
    let text = render(&e);
    assert!(
        text.contains("environment variable TBB_REPEETS is not one tbb reads"),
        "{text}"
    );
    assert!(text.contains("did you mean TBB_REPEATS?"), "{text}");
    let e = load_at(&path, &[], &[("TBB_FROBNICATE", "1")]).unwrap_err();
    let text = render(&e);
    assert!(
        text.contains("tbb reads TBB_FAMILIES, TBB_CONFIGS"),
        "{text}"
    );
    // A table is set key by key; the command line's, the scripts' and the catalogue's
    // key variables are read.
    let e = load_at(&path, &[], &[("TBB_CELLS", "x")]).unwrap_err();
    assert!(render(&e).contains("TBB_CELLS__<KEY>"), "{}", render(&e));
    let e = load_at(&path, &[], &[("TBB_BUDGETS__EPISODE_BUDGT", "5")]).unwrap_err();
    assert!(
        render(&e).contains(
            "environment variable TBB_BUDGETS__EPISODE_BUDGT: unknown key `episode_budgt`"
        ),
        "{}",
        render(&e)
    );
    let read = [
        ("TBB_FAMILIES", "families"),
        ("TBB_OUTPUTS", "out"),
        ("TBB_LOCAL_MODEL", "m.gguf"),
        ("TBB_LIVE_BIN", "tbb"),
        ("TBB_REPEATS", "1"),
    ];
    if let Err(e) = load_at(&path, &[], &read) {
        panic!("{}", render(&e));
    }
}

#[test]
fn a_bad_override_names_its_source_instead_of_a_span() {
    let (e, text) = failure(
        &edited("smoke.toml", |t| t),
        &[("budgets.completion_caps", "[0]")],
    );
    assert_eq!(e.problems().len(), 1, "{text}");
    assert!(
        text.contains("--set budgets.completion_caps: completion cap 0"),
        "{text}"
    );
    let env = load_at(&shipped("smoke.toml"), &[], &[("TBB_REPEATS", "0")]).unwrap_err();
    assert!(
        render(&env).contains("environment variable TBB_REPEATS"),
        "{}",
        render(&env)
    );
}

#[test]
fn a_disabled_configuration_must_be_enabled_first() {
    let m = edited("smoke.toml", |t| {
        replace(t, "\"sim-dunlin-max\"", "\"openai-gpt-4.1-mini\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("`openai-gpt-4.1-mini` is disabled"), "{text}");
    assert!(text.contains("enable it in"), "{text}");
}

#[test]
fn families_select_by_intent_domain_and_split() {
    let m = edited("smoke.toml", |t| {
        let names_start = t.find("names = [\n").unwrap();
        let names_end = t[names_start..].find("]\n").unwrap() + names_start + 2;
        format!(
            "{}domains = [\"email\"]\nsplits = [\"core\"]\n{}",
            &t[..names_start],
            &t[names_end..]
        )
    });
    let manifest = load(&m.path);
    assert!(!manifest.families.is_empty());
    assert!(manifest
        .families
        .iter()
        .all(|f| families().get(f).unwrap().domain() == tbb::family::Domain::Email));
}

#[test]
fn problems_in_the_file_and_in_overrides_are_reported_together() {
    let m = edited("smoke.toml", |t| {
        let t = replace(t, "\"sim-dunlin-max\"", "\"sim-dunlin-mx\"");
        replace(
            t,
            "preset = \"capacity\"",
            "[[cells.list]]\nv = 7\nw = \"hihg\"\nd = \"linked\"\n\n[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\ndepth = 7",
        )
    });
    let (e, text) = failure(&m, &[("repeats", "0")]);
    assert_eq!(e.problems().len(), 5, "{text}");
    for needle in [
        "w = \"hihg\"",
        "did you mean `high`?",
        "V must be one of 8, 32, 128",
        "depth = 7",
        "the frontier depths are 2, 6, 14, 30",
        "did you mean `sim-dunlin-max`?",
        "--set repeats: repeats 0 is out of range: it must be from 1 to 10000 repeats",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
}

#[test]
fn a_missing_catalogue_points_at_the_catalogue_key() {
    let m = edited("smoke.toml", |t| {
        replace(
            t,
            "catalogue = \"configurations.toml\"",
            "catalogue = \"nowhere.toml\"",
        )
    });
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("nowhere.toml does not exist"), "{text}");
    assert!(text.contains("catalogue = \"nowhere.toml\""), "{text}");
}

/// The smoke manifest with every numeric key a manifest has, each on its own line:
/// a listed cell with a depth and a configuration's caps.
fn every_number(t: String) -> String {
    let t = replace(
        t,
        "preset = \"capacity\"",
        "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\ndepth = 2",
    );
    replace(
        t,
        "completion_caps = [1024]",
        "completion_caps = [1024]\nconfiguration_caps = { sim-dunlin-max = [2048] }",
    )
}

/// `(line as written, the same line with VALUE in place of its number)`.
const NUMERIC_LINES: [(&str, &str); 9] = [
    ("repeats = 1", "repeats = VALUE"),
    ("v = 8", "v = VALUE"),
    ("depth = 2", "depth = VALUE"),
    ("completion_caps = [1024]", "completion_caps = [VALUE]"),
    (
        "configuration_caps = { sim-dunlin-max = [2048] }",
        "configuration_caps = { sim-dunlin-max = [VALUE] }",
    ),
    ("episode_budget = 128000", "episode_budget = VALUE"),
    ("call_slack = 2", "call_slack = VALUE"),
    ("draws = 1000", "draws = VALUE"),
    ("seed = 20261202", "seed = VALUE"),
];

#[test]
fn the_manifest_with_every_number_loads() {
    let m = edited("smoke.toml", every_number);
    let manifest = load(&m.path);
    assert_eq!(manifest.cells.len(), 1);
    assert_eq!(manifest.blocks[0].caps_for("sim-dunlin-max"), [2048]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Regression: `repeats = nan` and `menu = inf` became defaults, silently.
    #[test]
    fn nan_or_inf_in_any_numeric_field_is_an_error_at_its_value(
        line in proptest::sample::select(NUMERIC_LINES.to_vec()),
        value in proptest::sample::select(vec!["nan", "+nan", "-nan", "inf", "+inf", "-inf"]),
        also_a_string_field in proptest::bool::ANY,
    ) {
        let (from, to) = line;
        let to = to.replace("VALUE", value);
        let m = edited("smoke.toml", |t| {
            let t = replace(every_number(t), from, &to);
            if also_a_string_field {
                replace(t, "menu = \"fixed\"", "menu = inf")
            } else {
                t
            }
        });
        let (e, text) = failure(&m, &[]);
        proptest::prop_assert!(text.contains("is not a finite number"), "{}", text);
        proptest::prop_assert!(text.contains(&to), "the span shows `{}`:\n{}", to, text);
        proptest::prop_assert!(text.contains("╰── here"), "{}", text);
        proptest::prop_assert_eq!(e.problem_count(), 1 + usize::from(also_a_string_field), "{}", text);
    }

    #[test]
    fn nan_or_inf_in_an_override_names_the_override(
        key in proptest::sample::select(vec![
            "repeats", "budgets.episode_budget", "budgets.completion_caps", "schedule",
            "analyses", "cells.list",
        ]),
        value in proptest::sample::select(vec!["nan", "inf", "-inf", "[nan]", "[-inf]"]),
        by_env in proptest::bool::ANY,
    ) {
        // Tables are set by environment variables key by key only (`TBB_ANALYSES` is
        // not read), so only `--set` can replace the analyses.
        let by_env = by_env && key != "analyses";
        let result = if by_env {
            let var = format!("TBB_{}", key.to_ascii_uppercase().replace('.', "__"));
            let name = format!("environment variable {var}");
            (load_at(&shipped("smoke.toml"), &[], &[(var.as_str(), value)]), name)
        } else {
            (load_at(&shipped("smoke.toml"), &[(key, value)], &[]), format!("--set {key}"))
        };
        let (loaded, name) = result;
        match loaded {
            Ok(l) => proptest::prop_assert!(false, "{key}={value} loaded: repeats {}", l.blocks[0].repeats),
            Err(e) => {
                let text = render(&e);
                proptest::prop_assert!(text.contains(&format!("{name}: ")), "{}", text);
            }
        }
    }
}

#[test]
fn a_wrong_type_in_an_override_names_that_override_only() {
    let (e, text) = failure(
        &edited("smoke.toml", |t| t),
        &[("repeats", "2"), ("budgets.episode_budget", "\"lots\"")],
    );
    assert_eq!(e.problem_count(), 1, "{text}");
    assert!(
        text.contains("--set budgets.episode_budget: `budgets.episode_budget` does not fit"),
        "{text}"
    );
    assert!(!text.contains("--set repeats"), "{text}");
}

#[test]
fn a_wrong_type_deep_in_the_file_points_at_it() {
    let m = edited("smoke.toml", |t| {
        replace(
            t,
            "preset = \"capacity\"",
            "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\n[[cells.list]]\nv = \"eight\"\nw = \"low\"\nd = \"raw\"",
        )
    });
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("`cells.list.1.v` does not fit"), "{text}");
    assert!(text.contains("v = \"eight\""), "{text}");
}

/// Regression: "not valid TOML: invalid type: string \"list\"".
#[test]
fn a_cell_list_without_a_cells_table_line_loads() {
    let list = "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\n\n[[cells.list]]\nv = 128\nw = \"low\"\nd = \"raw\"\n";
    let without = edited("smoke.toml", |t| {
        replace(t, "[cells]\npreset = \"capacity\"\n", list)
    });
    let with = edited("smoke.toml", |t| {
        replace(
            t,
            "[cells]\npreset = \"capacity\"\n",
            &format!("[cells]\n{list}"),
        )
    });
    let a = load(&without.path);
    assert_eq!(a.cells.len(), 2);
    assert_eq!(a.content_hash, load(&with.path).content_hash);
    // Spans still point into such a list.
    let bad = edited("smoke.toml", |t| {
        replace(
            t,
            "[cells]\npreset = \"capacity\"\n",
            &list.replace("v = 128", "v = 127"),
        )
    });
    let (_, text) = failure(&bad, &[]);
    assert!(text.contains("v = 127"), "{text}");
}

/// Regression: 1,000 duplicate cells took 20 s and printed 12 MB. The report's size is
/// checked here; its speed is not (a timed test fails on a loaded machine, and the
/// quadratic work went with the unbounded report).
#[test]
fn a_thousand_duplicate_cells_give_a_bounded_report() {
    let entries: String = (0..1000)
        .map(|_| "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\n\n")
        .collect();
    let m = edited("smoke.toml", |t| {
        replace(t, "[cells]\npreset = \"capacity\"\n", &entries)
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problem_count(), 999, "{text}");
    assert_eq!(e.problems().len(), tbb::manifest::MAX_SHOWN);
    assert!(text.contains("999 problem(s)"), "{text}");
    assert!(text.contains("… and 949 more"), "{text}");
    assert_eq!(
        text.matches("is listed twice").count(),
        tbb::manifest::MAX_SHOWN
    );
    assert!(text.len() < 100_000, "{} bytes", text.len());
}

// ---------------------------------------------------------------------------------
// The configuration catalogue is validated when loaded
// ---------------------------------------------------------------------------------

/// A mutation of one catalogue entry that must never load.
#[derive(Debug, Clone)]
enum Mutation {
    Price(&'static str, f64),
    SimParam(&'static str, toml::Value),
    UnknownSimParam,
    DuplicateName,
}

fn mutation() -> impl proptest::strategy::Strategy<Value = Mutation> {
    use proptest::prelude::*;
    let bad = prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        (-1e6f64..-1e-9),
    ];
    let price_key = proptest::sample::select(vec!["input_per_mtok", "output_per_mtok"]);
    let probability = proptest::sample::select(vec![
        "stall",
        "handoff_reliability",
        "misread",
        "type_check",
    ]);
    let amount = proptest::sample::select(vec![
        "reasoning_base",
        "reasoning_per_schema",
        "spike_factor",
    ]);
    prop_oneof![
        (price_key, bad.clone()).prop_map(|(k, x)| Mutation::Price(k, x)),
        (probability, prop_oneof![bad.clone(), (1.0001f64..100.0)])
            .prop_map(|(k, x)| Mutation::SimParam(k, toml::Value::Float(x))),
        (amount.clone(), bad).prop_map(|(k, x)| Mutation::SimParam(k, toml::Value::Float(x))),
        amount.prop_map(|k| Mutation::SimParam(k, toml::Value::String("many".into()))),
        Just(Mutation::UnknownSimParam),
        Just(Mutation::DuplicateName),
    ]
}

fn shipped_catalogue() -> toml::Table {
    let text = std::fs::read_to_string(shipped("configurations.toml")).unwrap();
    toml::from_str(&text).unwrap()
}

fn load_catalogue(
    table: &toml::Table,
) -> (
    tempfile::TempDir,
    Result<tbb::provider::Catalogue, tbb::provider::config::CatalogueError>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("configurations.toml");
    std::fs::write(&path, toml::to_string(table).unwrap()).unwrap();
    let loaded = tbb::provider::Catalogue::load(&path);
    (dir, loaded)
}

fn render_any(e: &dyn miette::Diagnostic) -> String {
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(200)
        .render_report(&mut out, e)
        .unwrap();
    out
}

#[test]
fn the_shipped_catalogue_loads_and_survives_a_round_trip() {
    let (_dir, loaded) = load_catalogue(&shipped_catalogue());
    assert_eq!(loaded.map(|c| c.configurations.len()).ok(), Some(27));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    #[test]
    fn a_mutated_catalogue_never_loads_silently(
        picks in proptest::collection::vec((0usize..21, mutation()), 1..4),
    ) {
        let mut table = shipped_catalogue();
        let Some(toml::Value::Array(entries)) = table.get_mut("configuration") else {
            panic!("no [[configuration]]");
        };
        let sims: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].get("provider").and_then(|p| p.as_str()) == Some("sim"))
            .collect();
        let mut names = Vec::new();
        for (pick, m) in &picks {
            let i = sims[pick % sims.len()];
            let other = entries[sims[(pick + 1) % sims.len()]]["name"].clone();
            let entry = entries[i].as_table_mut().unwrap();
            names.push(entry["name"].as_str().unwrap_or_default().to_string());
            match m {
                Mutation::Price(key, x) => {
                    entry["prices"].as_table_mut().unwrap().insert(key.to_string(), toml::Value::Float(*x));
                }
                Mutation::SimParam(key, v) => {
                    entry["sim"].as_table_mut().unwrap().insert(key.to_string(), v.clone());
                }
                Mutation::UnknownSimParam => {
                    entry["sim"].as_table_mut().unwrap().insert("reasoning_bse".into(), toml::Value::Float(1.0));
                }
                Mutation::DuplicateName => {
                    entry.insert("name".into(), other.clone());
                    names.pop();
                    names.push(other.as_str().unwrap_or_default().to_string());
                }
            }
        }
        let (_dir, loaded) = load_catalogue(&table);
        match loaded {
            Ok(_) => proptest::prop_assert!(false, "{:?} loaded", picks),
            Err(e) => {
                let text = render_any(&e);
                proptest::prop_assert!(e.problem_count() >= 1, "{}", text);
                proptest::prop_assert!(e.problem_count() <= picks.len(), "{}", text);
                proptest::prop_assert!(text.contains("╰── here"), "a span is shown:\n{}", text);
                proptest::prop_assert!(
                    names.iter().any(|n| text.contains(&format!("`{n}`"))),
                    "the configuration is named:\n{}", text
                );
            }
        }
    }
}

#[test]
fn every_catalogue_problem_is_listed_at_once_at_its_value() {
    let text = std::fs::read_to_string(shipped("configurations.toml")).unwrap();
    let text = text
        .replacen("input_per_mtok = 0.30", "input_per_mtok = -0.30", 1)
        .replacen("reasoning_base = 140.0", "reasoning_bse = 140.0", 1)
        .replacen(
            "name = \"sim-dunlin-max\"",
            "name = \"sim-aurora-flash\"",
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("configurations.toml");
    std::fs::write(&path, &text).unwrap();
    let e = tbb::provider::Catalogue::load(&path).err().unwrap();
    let out = render_any(&e);
    assert_eq!(e.problem_count(), 3, "{out}");
    for needle in [
        "input_per_mtok = -0.30",
        "price input_per_mtok = -0.3 is not a finite, non-negative number",
        "unknown sim parameter `reasoning_bse`; did you mean `reasoning_base`?",
        "configuration `sim-aurora-flash` is defined twice",
    ] {
        assert!(out.contains(needle), "{needle} missing in\n{out}");
    }
}

/// A simulated agent's speed models its wall time; a live route's is measured, so a
/// speed table there is an error, as is a rate that is not positive.
#[test]
fn a_speed_is_for_simulated_agents_and_its_rates_are_positive() {
    let text = std::fs::read_to_string(shipped("configurations.toml")).unwrap();
    let text = text
        .replacen(
            "output_tokens_per_second = 180",
            "output_tokens_per_second = 0",
            1,
        )
        .replacen(
            "name = \"gemini-2.5-flash\"",
            "name = \"gemini-2.5-flash\"\nspeed = { first_token_ms = 300 }",
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("configurations.toml");
    std::fs::write(&path, &text).unwrap();
    let e = tbb::provider::Catalogue::load(&path).err().unwrap();
    let out = render_any(&e);
    assert_eq!(e.problem_count(), 2, "{out}");
    for needle in [
        "configuration `sim-aurora-flash`: speed output_tokens_per_second = 0 must be finite and positive",
        "configuration `gemini-2.5-flash`: a `[configuration.speed]` table models the latency of a simulated agent",
    ] {
        assert!(out.contains(needle), "{needle} missing in\n{out}");
    }
}

// ---------------------------------------------------------------------------------------
// Arms and blocks
// ---------------------------------------------------------------------------------------

/// The smoke manifest with its design moved into blocks (written after its tables).
fn with_blocks(blocks: &str) -> Edited {
    edited("smoke.toml", |t| format!("{t}\n{blocks}"))
}

#[test]
fn lanes_and_repairs_say_how_to_write_arms() {
    let m = edited("smoke.toml", |t| {
        format!("lanes = [\"routed\", \"fixed\"]\nrepairs = [\"none\", \"workflow_prompt\"]\n{t}")
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problem_count(), 1, "{text}");
    assert!(text.contains("were replaced by named arms"), "{text}");
    // The advice is the four arms, ready to paste.
    for needle in [
        "name = \"fixed-workflow_prompt\"",
        "menu = \"fixed\"",
        "prompt = \"workflow\"",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
}

#[test]
fn an_arm_component_is_checked_at_its_span_with_did_you_mean() {
    let m = edited("smoke.toml", |t| {
        let t = replace(t, "menu = \"fixed\"", "menu = \"fixd\"");
        replace(
            t,
            "name = \"routed\"",
            "name = \"routed\"\nprompt = \"workflw\"",
        )
    });
    let (e, text) = failure(&m, &[]);
    assert_eq!(e.problem_count(), 2, "{text}");
    assert!(text.contains("unknown menu component `fixd`"), "{text}");
    assert!(text.contains("did you mean `fixed`?"), "{text}");
    assert!(text.contains("did you mean `workflow`?"), "{text}");
    assert!(
        text.contains("menu = \"fixd\""),
        "the span shows the value:\n{text}"
    );
}

#[test]
fn two_arms_that_are_the_same_episode_are_refused() {
    // `fixed` becomes a second routed arm: same components, same cap.
    let m = edited("smoke.toml", |t| {
        replace(t, "menu = \"fixed\"", "menu = \"routed\"")
    });
    let (_, text) = failure(&m, &[]);
    assert!(
        text.contains("arms `routed` and `fixed` are the same episode"),
        "{text}"
    );
    // Pinning another cap makes it another episode.
    let m = edited("smoke.toml", |t| {
        replace(
            t,
            "menu = \"fixed\"",
            "menu = \"routed\"\ncompletion_cap = 4096",
        )
    });
    let l = load(&m.path);
    let caps: Vec<Option<u32>> = l.arms.iter().map(|a| a.completion_cap).collect();
    assert_eq!(caps, [None, Some(4096)]);
    assert_eq!(l.episode_count(), 288);
}

#[test]
fn blocks_take_what_they_omit_from_the_top_level() {
    let m = with_blocks(
        r#"
[[blocks]]
name = "first"
arms = ["fixed"]
repeats = 2
schedule = "counterbalanced"

[[blocks]]
name = "second"
arms = ["routed"]
[blocks.families]
names = ["overdue-escalation-harbor"]
[blocks.cells]
list = [{ v = 8, w = "low", d = "raw" }, { v = 128, w = "low", d = "raw" }]
[blocks.budgets]
completion_caps = [1024, 4096]
"#,
    );
    let m = load(&m.path);
    let names: Vec<&str> = m.blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    let (first, second) = (&m.blocks[0], &m.blocks[1]);
    assert_eq!((first.families.len(), first.cells.len()), (6, 12));
    assert_eq!(first.configurations, second.configurations);
    assert_eq!(first.repeats, 2);
    assert_eq!(second.repeats, 1);
    assert_eq!(second.completion_caps, [1024, 4096]);
    assert_eq!(first.completion_caps, [1024]);
    // 6 × 12 × 2 configurations × 1 arm × 2 repeats + 1 × 2 × 2 × 1 arm × 2 caps.
    assert_eq!(m.episode_count(), 288 + 8);
    // The unions the compile nodes and the variants table draw from.
    assert_eq!((m.families.len(), m.cells.len()), (6, 12));
    // Counterbalanced: repeat 0 runs the listed order, repeat 1 the next rotation.
    assert_eq!(first.order(2, 0), [0, 1]);
    assert_eq!(first.order(2, 1), [1, 0]);
    assert_eq!(first.order(3, 4), [1, 2, 0]);
    assert_eq!(
        second.order(2, 1),
        [0, 1],
        "concurrent keeps the listed order"
    );
}

#[test]
fn blocks_are_checked_where_they_were_written() {
    let m = with_blocks(
        r#"
[[blocks]]
name = "a"
arms = ["routd"]
schedule = "alternating"

[[blocks]]
name = "a"
[blocks.budgets]
episode_budget = 1000
"#,
    );
    let (e, text) = failure(&m, &[]);
    for needle in [
        "unknown arm `routd`",
        "did you mean `routed`?",
        "unknown schedule `alternating`",
        "block `a` is declared twice",
        "`episode_budget` is the study's, not a block's",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
    assert_eq!(e.problem_count(), 4, "{text}");
}

#[test]
fn two_blocks_may_not_share_an_episode() {
    let m = with_blocks(
        r#"
[[blocks]]
name = "one"

[[blocks]]
name = "two"
arms = ["fixed"]
[blocks.families]
names = ["retention-purge-aurora"]
"#,
    );
    let (_, text) = failure(&m, &[]);
    assert!(
        text.contains("block `two` repeats an episode of block `one`: retention-purge-aurora"),
        "{text}"
    );
    // Repeats count from 0 in every block: more repeats do not avoid the clash.
    let m = with_blocks(
        r#"
[[blocks]]
name = "one"

[[blocks]]
name = "two"
arms = ["fixed"]
repeats = 2
[blocks.families]
names = ["retention-purge-aurora"]
"#,
    );
    let (_, text) = failure(&m, &[]);
    assert!(text.contains("repeat 0"), "{text}");
}

/// The discovery study: the full catalogue at both routing levels, four menus (the
/// fixed baseline, two retrieval sizes, the router), the whole panel.
#[test]
fn the_discovery_manifest_runs_both_routing_levels_under_four_menus() {
    let m = load(&shipped("discovery.toml"));
    assert_eq!(
        m.menus(),
        vec![
            Menu::Fixed,
            Menu::Retrieval { k: 8 },
            Menu::Retrieval { k: 32 },
            Menu::Router
        ]
    );
    let levels: BTreeSet<String> = m
        .cells
        .iter()
        .map(|c| tbb::compile::cell::level_name(&c.r))
        .collect();
    assert_eq!(levels, BTreeSet::from(["high".into(), "low".into()]));
    assert!(m.cells.iter().all(|c| c.v == 128));
    assert_eq!(m.families.len(), 36);
    assert_eq!(m.configurations.len(), 21);
    assert_eq!(m.episode_count(), 6_048);
    let kinds: Vec<&str> = m.analyses.iter().map(|a| a.kind.name()).collect();
    assert_eq!(kinds, ["discovery", "costs", "report"]);
    assert!(m.skipped_analyses().is_empty());
}

#[test]
fn a_retrieval_menu_needs_its_k_and_only_it_takes_one() {
    let missing = edited("discovery.toml", |t| replace(t, "k = 8\n", ""));
    let (_, text) = failure(&missing, &[]);
    assert!(text.contains("a `retrieval` menu needs `k`"), "{text}");
    let zero = edited("discovery.toml", |t| replace(t, "k = 8\n", "k = 0\n"));
    let (_, text) = failure(&zero, &[]);
    assert!(
        text.contains("retrieval k 0 is out of range: it must be from 1 to 128 tool schemas"),
        "{text}"
    );
    let stray = edited("discovery.toml", |t| {
        replace(t, "menu = \"router\"", "menu = \"router\"\nk = 4")
    });
    let (_, text) = failure(&stray, &[]);
    assert!(
        text.contains("`k` belongs to a `retrieval` menu only"),
        "{text}"
    );
    assert!(text.contains("╰── here"), "{text}");
}

#[test]
fn the_discovery_analysis_is_skipped_without_matched_routing_levels() {
    let m = edited("discovery.toml", |t| {
        replace(
            t,
            "d = \"raw\"\nr = \"high\"",
            "d = \"linked\"\nr = \"high\"",
        )
    });
    let manifest = load(&m.path);
    let skipped = manifest.skipped_analyses();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0].1.contains("matched R-low / R-high cells"),
        "{skipped:?}"
    );
}

/// Every duplicate check is linear: 25,000 repeated cells and 12,000 repeated cluster
/// units are refused (on the old code locating each problem re-merged every layer, and
/// 5,000 cells took 24 s); the report stays bounded. (100,000 cells no longer fit the
/// manifest's size limit, refused before parsing.)
#[test]
fn thousands_of_duplicates_are_refused_with_a_bounded_report() {
    let m = edited("smoke.toml", |t| {
        let cells = vec!["{v=8,w=\"low\",d=\"raw\"}"; 25_000].join(",");
        let t = replace(
            t,
            "[cells]\npreset = \"capacity\"\n",
            &format!("[cells]\nlist = [{cells}]\n"),
        );
        let units = vec!["\"family\""; 12_000].join(", ");
        replace(
            t,
            "cluster_units = [\"family\", \"intent\", \"configuration\"]",
            &format!("cluster_units = [{units}]"),
        )
    });
    let (e, text) = failure(&m, &[]);
    assert!(
        e.problems().len() <= tbb::manifest::MAX_SHOWN + 1,
        "{}",
        e.problems().len()
    );
    assert!(text.contains("is listed twice"), "{text}");
    assert!(text.len() < 200_000, "{} bytes", text.len());
}

/// Every shipped study that runs a condition more than once reports pass^k and
/// run-to-run disagreement (the `repeats` analysis), and the capacity study lists it
/// too, for a run with `TBB_REPEATS` above 1.
#[test]
fn every_shipped_study_with_repeats_lists_the_repeats_analysis() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let path = entry.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "configurations.toml" || !name.ends_with(".toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let repeats = table
            .get("repeats")
            .and_then(toml::Value::as_integer)
            .unwrap_or(1);
        let lists = table
            .get("analyses")
            .and_then(toml::Value::as_array)
            .is_some_and(|a| {
                a.iter()
                    .any(|x| x.get("kind").and_then(toml::Value::as_str) == Some("repeats"))
            });
        if repeats > 1 || name == "capacity.toml" {
            assert!(
                lists,
                "{name} runs {repeats} repeats but lists no `repeats` analysis"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "capacity, crossover, sentinel and sweep");
}
