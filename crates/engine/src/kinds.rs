//! The registry of every analysis kind a manifest may name: the statistical kinds of
//! `tbb_analysis::KINDS`, in report order, then the report, which renders their tables.
//!
//! Never: defines a kind (each lives in its own file of the analysis or report crate).

use tbb_analysis::{AnalysisKind, KINDS};

/// The report kind: the last of every study that lists it.
static REPORT: AnalysisKind = AnalysisKind::new(&tbb_report::kind::Report);

/// A kind compiled only into the engine's tests (`crate::toy`).
#[cfg(test)]
static TOY: AnalysisKind = AnalysisKind::new(&crate::toy::Toy);

/// Every kind, in report order.
pub fn all() -> impl Iterator<Item = AnalysisKind> + Clone {
    let extra: &'static [AnalysisKind] = {
        #[cfg(not(test))]
        {
            std::slice::from_ref(&REPORT)
        }
        #[cfg(test)]
        {
            static EXTRA: [AnalysisKind; 2] = [REPORT, TOY];
            &EXTRA
        }
    };
    KINDS
        .iter()
        .map(|k| AnalysisKind::new(*k))
        .chain(extra.iter().copied())
}

/// The kind registered under `name`.
pub fn get(name: &str) -> Option<AnalysisKind> {
    all().find(|k| k.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_registered_once_and_the_report_comes_after_the_statistics() {
        let names: Vec<&str> = all().map(AnalysisKind::name).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(names.len(), KINDS.len() + 2);
        assert_eq!(names[KINDS.len()], "report");
        assert_eq!(get("report").map(AnalysisKind::name), Some("report"));
        assert_eq!(get("contrasts").map(AnalysisKind::name), Some("contrasts"));
        assert!(get("nope").is_none());
    }
}
