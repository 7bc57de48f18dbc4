//! An analysis reading another study's table, through the binary: the smoke study
//! writes `truncation`, a small `sweep` study's `truncation_strata` analysis reads it
//! (`inputs = { truncation = { from = "smoke" } }`). The pin in the lockfile, the plan's
//! upstream lines, and apply refusing a missing or stale upstream with the command that
//! fixes it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use arrow_array::{Array, Float64Array, StringArray};
use common::repo;
use tbb::tables::read_table;

/// One family, one cell, three configurations — one of which the smoke study never
/// ran — reading the smoke study's truncation table.
const SWEEP: &str = r#"
[[arms]]
name = "routed"
menu = "routed"

[study]
name = "sweep"
catalogue = "configurations.toml"

[families]
names = ["overdue-escalation-harbor"]

[[cells.list]]
v = 8
w = "low"
d = "raw"

[configurations]
names = ["sim-aurora-flash", "sim-aurora-pro", "sim-dunlin-max"]

[[analyses]]
kind = "truncation_strata"
inputs = { truncation = { from = "smoke" } }
"#;

/// A directory with `manifests/` (the catalogue, smoke, sweep) and `prompts/`.
struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        let dir = Dir(common::scratch());
        std::fs::copy(
            repo().join("manifests/smoke.toml"),
            dir.path("manifests/smoke.toml"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path("manifests/sweep.toml"), SWEEP).unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.path().join(rel)
    }

    fn run(&self, args: &[&str]) -> Output {
        common::tbb_in(self.0.path())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tbb {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "tbb {args:?} succeeded:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).to_string()
    }
}

fn hash(path: &Path) -> String {
    blake3::hash(&std::fs::read(path).unwrap_or_else(|e| panic!("{e}")))
        .to_hex()
        .to_string()
}

fn strings(path: &Path, column: &str) -> Vec<Option<String>> {
    let (batches, _) = read_table(path).unwrap_or_else(|e| panic!("{e}"));
    let c = batches[0]
        .column_by_name(column)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .unwrap_or_else(|| panic!("{column}"));
    (0..c.len())
        .map(|i| (!c.is_null(i)).then(|| c.value(i).to_string()))
        .collect()
}

#[test]
fn an_analysis_reads_another_studys_table_pinned_by_its_hash() {
    let dir = Dir::new();
    let fix = "run `tbb apply manifests/smoke.toml`";

    // Missing upstream: plan says so, apply refuses before writing anything.
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(
        plan.contains("! upstream smoke/truncation: outputs/smoke/truncation.parquet is missing; run `tbb apply manifests/smoke.toml`"),
        "{plan}"
    );
    let refused = dir.fails(&["apply", "manifests/sweep.toml"]);
    assert!(refused.contains("upstream study `smoke`"), "{refused}");
    assert!(refused.contains(fix), "{refused}");
    insta::assert_snapshot!("apply_refuses_a_missing_upstream", refused);
    assert!(!dir.path("outputs/sweep").exists());
    assert!(!dir.path("lockfiles/sweep.lock").exists());

    // The upstream applied: the plan shows the pin, apply works and writes it.
    dir.ok(&["apply", "manifests/smoke.toml"]);
    let table = dir.path("outputs/smoke/truncation.parquet");
    let pinned = hash(&table);
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    let line = format!(
        "upstream smoke/truncation (outputs/smoke/truncation.parquet): blake3 {}, pinned by this apply",
        &pinned[..16]
    );
    assert!(plan.contains(&line), "{plan}");
    dir.ok(&["apply", "manifests/sweep.toml"]);
    let lock =
        std::fs::read_to_string(dir.path("lockfiles/sweep.lock")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        lock.contains(&format!(
            "[[upstream]]\nstudy = \"smoke\"\ntable = \"truncation\"\nblake3 = \"{pinned}\""
        )),
        "{lock}"
    );
    let strata = dir.path("outputs/sweep/truncation_strata.parquet");
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        strings(&strata, "configuration"),
        [
            s("sim-aurora-flash"),
            s("sim-aurora-pro"),
            s("sim-dunlin-max")
        ]
    );
    // sim-aurora-pro is not in the smoke study: listed, with a null share.
    let (batches, _) = read_table(&strata).unwrap_or_else(|e| panic!("{e}"));
    let share = batches[0]
        .column_by_name("truncated_share")
        .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
        .unwrap_or_else(|| panic!("truncated_share"));
    assert!(share.is_valid(0) && share.is_null(1) && share.is_valid(2));
    let stratum = strings(&strata, "stratum");
    assert_eq!(stratum[1], None);
    assert_eq!(stratum[2], s("N"), "sim-dunlin-max never truncates");
    assert!(
        stratum[0] == s("B") || stratum[0] == s("M"),
        "sim-aurora-flash truncates: {stratum:?}"
    );
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(
        plan.contains(&format!("blake3 {}, pinned\n", &pinned[..16])),
        "{plan}"
    );
    assert!(plan.contains("No changes"), "{plan}");

    // The upstream re-applied under an override: its table no longer matches its
    // manifest. Plan says so, apply refuses with the fixing command.
    dir.ok(&[
        "apply",
        "manifests/smoke.toml",
        "--set",
        "budgets.episode_budget=128001",
    ]);
    assert_ne!(hash(&table), pinned);
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(
        plan.contains("! upstream smoke/truncation: stale: outputs/smoke/truncation.parquet was written for another manifest than manifests/smoke.toml now is"),
        "{plan}"
    );
    assert!(plan.contains(fix), "{plan}");
    let refused = dir.fails(&["apply", "manifests/sweep.toml"]);
    assert!(refused.contains("stale"), "{refused}");
    assert!(refused.contains(fix), "{refused}");

    // The fix: the upstream re-applied as its manifest says gives back the pinned
    // table (republished from the cached analysis tables), so nothing reruns.
    dir.ok(&["apply", "manifests/smoke.toml"]);
    assert_eq!(hash(&table), pinned);
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(plan.contains("No changes"), "{plan}");

    // A changed upstream, re-applied: fresh but no longer the pinned table. The
    // analysis reruns, saying why, and apply re-pins it; `--locked` refuses the drift.
    let smoke = std::fs::read_to_string(dir.path("manifests/smoke.toml"))
        .unwrap_or_else(|e| panic!("{e}"))
        .replace("draws = 1000", "draws = 999");
    std::fs::write(dir.path("manifests/smoke.toml"), smoke).unwrap_or_else(|e| panic!("{e}"));
    dir.ok(&["apply", "manifests/smoke.toml"]);
    let repinned = hash(&table);
    assert_ne!(repinned, pinned);
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(
        plan.contains(&format!(
            "blake3 {}, changed since pinned {}",
            &repinned[..16],
            &pinned[..16]
        )),
        "{plan}"
    );
    assert!(
        plan.contains("~ analysis[truncation_strata]: table smoke/truncation changed"),
        "{plan}"
    );
    let drift = dir.fails(&["apply", "manifests/sweep.toml", "--locked"]);
    assert!(drift.contains("would change"), "{drift}");
    dir.ok(&["apply", "manifests/sweep.toml"]);
    let lock =
        std::fs::read_to_string(dir.path("lockfiles/sweep.lock")).unwrap_or_else(|e| panic!("{e}"));
    assert!(lock.contains(&repinned), "{lock}");
}

#[test]
fn an_upstream_study_without_a_manifest_is_named() {
    let dir = Dir::new();
    std::fs::write(
        dir.path("manifests/sweep.toml"),
        SWEEP.replace("from = \"smoke\"", "from = \"capacity\""),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(
        plan.contains("! upstream capacity/truncation: no manifest in manifests declares `[study] name = \"capacity\"`"),
        "{plan}"
    );
    let refused = dir.fails(&["apply", "manifests/sweep.toml"]);
    assert!(
        refused.contains("put the manifest of study `capacity` beside manifests/sweep.toml"),
        "{refused}"
    );
}

#[test]
fn an_unknown_input_table_or_parameter_is_an_error_at_its_span() {
    let dir = Dir::new();
    std::fs::write(
        dir.path("manifests/sweep.toml"),
        SWEEP.replace(
            "inputs = { truncation = { from = \"smoke\" } }",
            "inputs = { truncaton = { from = \"smoke\" } }\ncompletion_cpa = 1024",
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let err = dir.fails(&["manifest", "check", "manifests/sweep.toml"]);
    assert!(
        err.contains("unknown input table of the truncation_strata analysis `truncaton`"),
        "{err}"
    );
    assert!(err.contains("did you mean `truncation`?"), "{err}");
    assert!(
        err.contains("unknown parameter of the truncation_strata analysis `completion_cpa`"),
        "{err}"
    );
    assert!(err.contains("did you mean `completion_cap`?"), "{err}");
    assert!(err.contains("completion_cpa = 1024"), "the span: {err}");
}

#[test]
fn without_inputs_the_table_is_this_studys_own_and_must_be_written_before() {
    let dir = Dir::new();
    let smoke =
        std::fs::read_to_string(dir.path("manifests/smoke.toml")).unwrap_or_else(|e| panic!("{e}"));
    // Read before it is written: skipped, with why.
    let early = smoke.replace(
        "[[analyses]]\nkind = \"truncation\"\n",
        "[[analyses]]\nkind = \"truncation_strata\"\n\n[[analyses]]\nkind = \"truncation\"\n",
    );
    std::fs::write(dir.path("manifests/smoke.toml"), &early).unwrap_or_else(|e| panic!("{e}"));
    let plan = dir.ok(&["plan", "manifests/smoke.toml"]);
    assert!(
        plan.contains("! analysis truncation_strata is skipped: it reads the `truncation` table, which no analysis listed before it writes"),
        "{plan}"
    );
    // Listed after the truncation analysis: it reads that node's table.
    let late = format!("{smoke}\n[[analyses]]\nkind = \"truncation_strata\"\n");
    std::fs::write(dir.path("manifests/smoke.toml"), late).unwrap_or_else(|e| panic!("{e}"));
    dir.ok(&["apply", "manifests/smoke.toml"]);
    let strata = dir.path("outputs/smoke/truncation_strata.parquet");
    assert_eq!(
        strings(&strata, "stratum"),
        [Some("B".to_string()), Some("N".to_string())]
    );
    let explain = dir.ok(&[
        "explain",
        "manifests/smoke.toml",
        "analysis[truncation_strata]",
    ]);
    assert!(explain.contains("truncation"), "{explain}");
}

/// The cap sweep's configurations are the rule's: for a study that runs others, plan
/// names the list the rule selects from the upstream tables and apply refuses before
/// running anything; running that list passes, and the table says why each one runs.
#[test]
fn the_sweep_runs_the_configurations_its_rule_selects() {
    let dir = Dir::new();
    dir.ok(&["apply", "manifests/smoke.toml"]);
    let sweep = |names: &str| {
        SWEEP
            .replace(
                r#"names = ["sim-aurora-flash", "sim-aurora-pro", "sim-dunlin-max"]"#,
                &format!("names = [{names}]"),
            )
            .replace(
                "kind = \"truncation_strata\"\ninputs = { truncation = { from = \"smoke\" } }",
                "kind = \"sweep_strata\"\ninputs = { truncation = { from = \"smoke\" }, \
                 contrasts_by_configuration = { from = \"smoke\" } }",
            )
    };
    std::fs::write(
        dir.path("manifests/sweep.toml"),
        sweep(r#""sim-aurora-flash""#),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let plan = dir.ok(&["plan", "manifests/sweep.toml"]);
    assert!(
        plan.contains(r#"! analysis sweep_strata: the study runs ["sim-aurora-flash"] but the rule selects ["sim-aurora-flash", "sim-dunlin-max"]"#),
        "{plan}"
    );
    let refused = dir.fails(&["apply", "manifests/sweep.toml"]);
    assert!(!dir.path("outputs/sweep").exists(), "nothing ran");
    // The diagnostic is wrapped to the terminal: compare without the wrapping.
    let flat = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != '│')
            .collect()
    };
    let wanted = r#"set `[configurations] names = ["sim-aurora-flash", "sim-dunlin-max"]`"#;
    assert!(flat(&refused).contains(&flat(wanted)), "{refused}");
    std::fs::write(
        dir.path("manifests/sweep.toml"),
        sweep(r#""sim-aurora-flash", "sim-dunlin-max""#),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    dir.ok(&["apply", "manifests/sweep.toml"]);
    let strata = dir.path("outputs/sweep/sweep_strata.parquet");
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        strings(&strata, "configuration"),
        [s("sim-aurora-flash"), s("sim-dunlin-max")]
    );
    assert_eq!(strings(&strata, "stratum"), [s("B"), s("N")]);
    let lock =
        std::fs::read_to_string(dir.path("lockfiles/sweep.lock")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        lock.contains("table = \"truncation\"")
            && lock.contains("table = \"contrasts_by_configuration\""),
        "{lock}"
    );
}
