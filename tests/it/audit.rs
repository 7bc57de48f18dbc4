//! The Appendix B audits over every family at every cell of its study (and again at
//! routing difficulty high): no findings allowed. Also checks that the audits can fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use tbb::audit::{audit_variant, check_encodings, check_matched};
use tbb::compile::{compile, Cell, Encoding, Variant, Workflow};
use tbb::family::{FamilySet, Split};

fn families() -> FamilySet {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("families");
    match FamilySet::load(&root) {
        Ok(set) => set,
        Err(e) => panic!("families do not load: {:?}", miette::Report::new(e)),
    }
}

/// `tbb audit` (the same code as a user runs) over every family: every check runs on
/// every subject it is defined for and none fails. The JSON lists the first failures.
#[test]
fn every_family_passes_every_audit_at_every_cell() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = assert_cmd::Command::cargo_bin("tbb")
        .expect("the tbb binary is built")
        .current_dir(root)
        .env("TBB_FAMILIES", root.join("families"))
        .args(["audit", "--json"])
        .output()
        .expect("tbb runs");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(
        out.status.success() && summary["passed"] == true,
        "{:#}\n{}",
        summary["checks"],
        String::from_utf8_lossy(&out.stderr)
    );
    let set = families();
    let families = set.families.len() as u64;
    let cells: Vec<Cell> = set
        .families
        .iter()
        .flat_map(tbb::audit::audit_cells)
        .collect();
    let variants = cells.len() as u64;
    let linked = cells.iter().filter(|c| c.d == Encoding::Linked).count() as u64;
    assert_eq!(
        (summary["families"].as_u64(), summary["variants"].as_u64()),
        (Some(families), Some(variants))
    );
    let checks = summary["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), tbb::audit::CHECKS.len());
    for check in &checks {
        let cases = check["cases"].as_u64().unwrap_or(0);
        let expected = match check["subject"].as_str() {
            Some("families") => families,
            _ if check["check"] == "links" => linked,
            _ => variants,
        };
        assert_eq!(cases, expected, "{check}");
        assert_eq!(
            (check["passed"].as_u64(), check["failed"].as_u64()),
            (Some(cases), Some(0)),
            "{check}"
        );
    }
}

fn variant(set: &FamilySet, family: &str, cell: Cell) -> Variant {
    let Some(f) = set.get(family) else {
        panic!("no family {family}")
    };
    match compile(f, &cell) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

const HARBOR: &str = "overdue-escalation-harbor";

/// The audits are not vacuous: each planted defect is found by the check that guards it.
#[test]
fn the_audits_find_planted_defects() {
    let set = families();
    let base = variant(&set, HARBOR, Cell::new(8, Workflow::High, Encoding::Raw));
    let checks =
        |v: &Variant| -> Vec<&'static str> { audit_variant(v).iter().map(|f| f.check).collect() };
    assert!(checks(&base).is_empty());

    let mut wrong_minimum = base.clone();
    wrong_minimum.certified_min_calls += 1;
    assert!(checks(&wrong_minimum).contains(&"certified_minimum"));

    let mut redundant = base.clone();
    let extra = redundant.reference_program.steps[0].clone();
    redundant.reference_program.steps.push(extra);
    redundant.certified_min_calls += 1;
    assert!(checks(&redundant).contains(&"certified_minimum"));

    let mut lax_grader_target = base.clone();
    lax_grader_target.permitted_change = None;
    assert!(checks(&lax_grader_target).contains(&"grader"));

    let family = set.get(HARBOR).map(|f| f.name.clone()).unwrap_or_default();
    let raw = variant(&set, HARBOR, Cell::new(8, Workflow::High, Encoding::Raw));
    let mut linked = variant(&set, HARBOR, Cell::new(8, Workflow::High, Encoding::Linked));
    assert!(check_encodings(&[raw.clone(), linked.clone()]).is_empty());
    let read = linked.reference_program.steps[1].call.arguments["id"]
        .as_str()
        .map(str::to_string);
    if let Some(r) = linked
        .store
        .records
        .iter_mut()
        .find(|r| Some(&r.id) == read.as_ref())
    {
        r.fields.insert("status".into(), serde_json::json!("paid"));
    }
    let findings = check_encodings(&[raw.clone(), linked.clone()]);
    assert!(
        findings
            .iter()
            .any(|f| f.check == "encodings" && f.family == family),
        "{findings:?}"
    );

    let mut big = variant(&set, HARBOR, Cell::new(128, Workflow::High, Encoding::Raw));
    assert!(check_matched(
        set.get(HARBOR).expect("harbor"),
        &[raw.clone(), big.clone()]
    )
    .is_empty());
    // Ids keyed by the whole cell (the old defect): a V sibling's record renamed.
    let mut rekeyed = big.clone();
    let mut records = rekeyed.store.records.clone();
    let old = records[0].id.clone();
    records[0].id = "rec_000000000000".into();
    for step in &mut rekeyed.reference_program.steps {
        if step.call.arguments["id"] == serde_json::json!(old) {
            step.call.arguments["id"] = serde_json::json!("rec_000000000000");
        }
    }
    rekeyed.store = tbb::compile::Store::new(records);
    let findings = check_matched(set.get(HARBOR).expect("harbor"), &[raw.clone(), rekeyed]);
    let checks: BTreeSet<&str> = findings.iter().map(|f| f.check).collect();
    assert!(
        checks.contains("siblings") && checks.contains("matched"),
        "{findings:?}"
    );
    big.facts[0].1 = serde_json::json!("open");
    let findings = check_matched(set.get(HARBOR).expect("harbor"), &[raw, big]);
    assert!(
        findings
            .iter()
            .any(|f| f.detail.contains("decision or facts")),
        "{findings:?}"
    );
}

/// Families of one intent differ in facts, decisions and evidence; intents differ in
/// domain rules and tools.
#[test]
fn families_are_genuinely_different_tasks() {
    let set = families();
    let mut collections = BTreeSet::new();
    for intent in &set.intents {
        assert!(
            collections.insert(intent.collection.name.clone()),
            "{} reuses a collection",
            intent.name()
        );
        let members: Vec<_> = set
            .families
            .iter()
            .filter(|f| f.intent.name() == intent.name())
            .collect();
        if members.len() > 1 {
            let decisions: BTreeSet<&str> = members.iter().map(|f| f.decision.as_str()).collect();
            assert!(
                decisions.len() >= 2,
                "{} has one decision label",
                intent.name()
            );
            let facts: BTreeSet<String> =
                members.iter().map(|f| format!("{:?}", f.facts)).collect();
            assert_eq!(
                facts.len(),
                members.len(),
                "{} repeats a fact set",
                intent.name()
            );
        }
    }
    let mut per_domain: BTreeMap<String, usize> = BTreeMap::new();
    for i in set.intents.iter().filter(|i| i.def.split == Split::Core) {
        *per_domain.entry(format!("{:?}", i.def.domain)).or_default() += 1;
    }
    assert_eq!(per_domain.len(), 4, "{per_domain:?}");
    assert!(per_domain.values().all(|&n| n >= 2), "{per_domain:?}");
    assert_eq!(set.split(Split::Core).count(), 36);
    assert_eq!(set.split(Split::Holdout).count(), 24);
    assert_eq!(set.split(Split::Frontier).count(), 4);
    let holdout_intents: BTreeSet<&str> =
        set.split(Split::Holdout).map(|f| f.intent.name()).collect();
    assert_eq!(holdout_intents.len(), 24);
}
