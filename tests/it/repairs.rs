//! The repairs study and the sentinel repeats through the binary: the shipped
//! manifests, shrunk to three families and two configurations, apply offline; the
//! plan right after is empty; the tables read back with the notebook's columns, every
//! wrong-layer control on exactly its repair's cells, R listed as not estimable, and
//! the sentinel pairs run three times.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use arrow_array::{Array, RecordBatch, StringArray, UInt32Array};
use common::{repo, scratch, tbb_in};
use tbb::tables::analyses::repairs::{RepairsRow, Role};
use tbb::tables::analyses::sentinel::SentinelRow;
use tbb::tables::{read_table, TableRow};

/// A shipped manifest with `edits` applied; each edit must match.
fn shrunk(name: &str, edits: &[(&str, &str)]) -> String {
    let path = repo().join("manifests").join(name);
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    for (from, to) in edits {
        assert!(text.contains(from), "{name} no longer holds `{from}`");
        text = text.replace(from, to);
    }
    text
}

const FEW: &str = r#"names = ["sim-aurora-flash", "sim-dunlin-max"]"#;

/// A directory with the catalogue, the prompts and one manifest.
struct Study {
    dir: tempfile::TempDir,
    name: &'static str,
}

impl Study {
    fn new(name: &'static str, manifest: &str) -> Study {
        let dir = scratch();
        std::fs::write(dir.path().join(format!("manifests/{name}.toml")), manifest)
            .unwrap_or_else(|e| panic!("{e}"));
        Study { dir, name }
    }

    fn tbb(&self, command: &str) -> String {
        let out = tbb_in(self.dir.path())
            .args([command, &format!("manifests/{}.toml", self.name)])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "tbb {command} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn table(&self, table: &str) -> RecordBatch {
        let path: PathBuf = self
            .dir
            .path()
            .join("outputs")
            .join(self.name)
            .join(format!("{table}.parquet"));
        let (batches, _) = read_table(&path).unwrap_or_else(|e| panic!("{e}"));
        only_batch(&batches)
    }
}

fn only_batch(batches: &[RecordBatch]) -> RecordBatch {
    assert_eq!(batches.len(), 1, "one row group");
    batches[0].clone()
}

fn text(t: &RecordBatch, c: &str) -> Vec<Option<String>> {
    let a = t
        .column_by_name(c)
        .and_then(|a| a.as_any().downcast_ref::<StringArray>())
        .unwrap_or_else(|| panic!("{c}"));
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

fn int(t: &RecordBatch, c: &str) -> Vec<u32> {
    t.column_by_name(c)
        .and_then(|a| a.as_any().downcast_ref::<UInt32Array>())
        .map(|a| a.values().to_vec())
        .unwrap_or_else(|| panic!("{c}"))
}

fn plan_is_empty(s: &Study) {
    let plan = s.tbb("plan");
    assert!(plan.contains("nothing to run"), "{plan}");
}

fn unwrap_str(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

#[test]
fn the_repairs_study_applies_and_every_control_runs_on_its_repairs_cells() {
    let manifest = shrunk(
        "repairs.toml",
        &[
            (
                r#"splits = ["core"]"#,
                r#"names = ["overdue-escalation-harbor", "phishing-report-triage-kestrel", "retention-purge-aurora"]"#,
            ),
            ("all_sim = true", FEW),
            ("draws = 10000", "draws = 400"),
        ],
    );
    let s = Study::new("repairs", &manifest);
    s.tbb("apply");
    plan_is_empty(&s);

    // Episodes: every arm on exactly the same (family, configuration, cell).
    let e = s.table("episodes");
    let (arm, family, conf) = (
        text(&e, "arm"),
        text(&e, "family"),
        text(&e, "configuration"),
    );
    let (w, d, r) = (text(&e, "w"), text(&e, "d"), text(&e, "r"));
    let v = int(&e, "v");
    let mut by_arm: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in 0..e.num_rows() {
        by_arm
            .entry(unwrap_str(&arm[i]).into())
            .or_default()
            .insert(format!(
                "{} {} {} {} {} {}",
                unwrap_str(&family[i]),
                unwrap_str(&conf[i]),
                v[i],
                unwrap_str(&w[i]),
                unwrap_str(&d[i]),
                unwrap_str(&r[i])
            ));
    }
    // The four endpoint arms on the same conditions; the router on (8, low, raw) at both
    // routing levels, and at R high every other arm with it.
    assert_eq!(by_arm.len(), 5);
    let sets: Vec<(&String, &BTreeSet<String>)> = by_arm.iter().collect();
    let fixed = &by_arm["fixed"];
    for (name, set) in &sets {
        if name.as_str() == "router" {
            assert_eq!(
                set.len(),
                3 * 2 * 2,
                "3 families × 2 configurations × R low, high"
            );
            assert!(
                set.is_subset(fixed),
                "the router's conditions are the others' too"
            );
        } else {
            assert_eq!(set.len(), 3 * 2 * 9, "{name}");
            assert_eq!(*set, fixed, "{name}");
        }
    }
    assert_eq!(
        s.table("episodes").num_rows(),
        3 * 2 * (8 * 4 + 1 + 5),
        "endpoints × 4 arms, the router at R low, 5 arms at R high"
    );

    // The table: each layer's repair then its three wrong-layer controls on the same
    // cells, the benchmark last.
    let t = RepairsRow::from_batch(&s.table("repairs")).unwrap_or_else(|e| panic!("{e}"));
    let layers: Vec<&str> = t.iter().map(|r| r.layer.as_str()).collect();
    assert_eq!(
        layers,
        ["V", "V", "V", "W", "W", "W", "D", "D", "D", "R", "R", "R", "R", "generic"]
    );
    for (l, per_arm) in [
        ("V", 3 * 2 * 8),
        ("W", 3 * 2 * 8),
        ("D", 3 * 2 * 8),
        ("R", 3 * 2 * 2),
    ] {
        let own = t
            .iter()
            .find(|r| r.layer == l && r.role == Role::Repair)
            .unwrap_or_else(|| panic!("{l}"));
        assert_eq!(own.n_episodes_per_arm, per_arm, "{l}");
        assert!(own.estimable, "{l}");
        for r in t.iter().filter(|r| r.layer == l && r.role != Role::Repair) {
            assert_eq!(r.role, Role::WrongLayerControl);
            assert_eq!(
                (&r.cells, r.n_episodes_per_arm),
                (&own.cells, own.n_episodes_per_arm),
                "{l}"
            );
        }
    }
    let benchmark = &t[13];
    let close = |x: Option<f64>, y: f64| x.is_some_and(|x| (x - y).abs() < 1e-9);
    assert!(
        close(benchmark.l_pp, 40.0)
            && close(benchmark.gamma_pp, 30.0)
            && close(benchmark.sigma_pp, 20.0)
    );
    // The switch comparison: each of the four repairs, both configurations incumbents.
    use tbb::tables::analyses::switches::SwitchSummaryRow;
    use tbb::tables::TableRow;
    let summary = SwitchSummaryRow::from_batch(&s.table(SwitchSummaryRow::TABLE))
        .unwrap_or_else(|e| panic!("{e}"));
    let repairs: Vec<&str> = summary.iter().map(|r| r.repair.as_str()).collect();
    assert_eq!(repairs, ["guide", "routed", "router", "workflow"]);
    let report = std::fs::read_to_string(s.dir.path().join("outputs/repairs/report.md"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        report.contains("## Repairs against their own layer"),
        "{report}"
    );
    assert!(
        report.contains("17.5 [14.9, 20.2]"),
        "the paper's value beside ours"
    );
}

#[test]
fn the_sentinel_study_runs_each_pair_three_times() {
    let manifest = shrunk(
        "sentinel.toml",
        &[("all_sim = true", FEW), ("draws = 10000", "draws = 400")],
    );
    let s = Study::new("sentinel", &manifest);
    s.tbb("apply");
    plan_is_empty(&s);
    let t = SentinelRow::from_batch(&s.table("sentinel")).unwrap_or_else(|e| panic!("{e}"));
    let scopes: Vec<&str> = t.iter().map(|r| r.scope.as_str()).collect();
    assert_eq!(scopes, ["V", "W", "D", "all"]);
    // 4 families × 2 configurations × 2 arms per pair; 3 runs each.
    let of = |f: fn(&SentinelRow) -> u32| t.iter().map(f).collect::<Vec<u32>>();
    assert_eq!(of(|r| r.n_groups), [16, 16, 16, 48]);
    assert_eq!(of(|r| r.n_runs), [48, 48, 48, 144]);
    assert_eq!(of(|r| r.runs_min), [3, 3, 3, 3]);
    for (i, r) in t.iter().enumerate() {
        // Disagreement is exactly "some run but not every run".
        assert!(
            (r.any_run - r.all_runs - r.disagreement).abs() < 1e-12,
            "{i}"
        );
        assert!(
            r.all_runs <= r.pass_at_1 && r.pass_at_1 <= r.any_run,
            "pass@1 lies between all-runs and any-run"
        );
    }
    assert!(t[..3].iter().all(|r| r.gain_pp.is_some()) && t[3].gain_pp.is_none());
}
