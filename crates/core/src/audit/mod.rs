//! Static and runtime audits of the generator and the grader (the paper's Appendix B).
//!
//! Owns the checks that every family, at every cell of its study, compiles into matched
//! variants that differ only in their pressure, that the certified minimum is right,
//! that every encoding carries the same facts, and that the grader accepts every valid
//! program and rejects each kind of defect with the right failure record.
//!
//! Each check returns [`Finding`]s rather than panicking, so the same code serves the
//! test suite (which requires no findings) and a user auditing their own families.
//! Never: changes a family, a variant or a verdict; it only compiles, executes and
//! grades.

mod certify;
mod matched;
mod mutations;

use std::fmt;

use crate::compile::{compile, study_cells, Cell, Routing, Variant};
use crate::family::Family;

pub use certify::{brute_force_minimum, check_encodings, check_observations, check_orders};
pub use matched::{check_matched, check_nested_menus};
pub use mutations::{check_mutations, mutations, Mutation};

/// One audit failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which check.
    pub check: &'static str,
    /// Family.
    pub family: String,
    /// Cell, when the check is about one variant.
    pub cell: Option<Cell>,
    /// What was wrong.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cell {
            Some(c) => write!(
                f,
                "[{}] {} at {}: {}",
                self.check, self.family, c, self.detail
            ),
            None => write!(f, "[{}] {}: {}", self.check, self.family, self.detail),
        }
    }
}

/// The cells a family is audited at: its study cells, and each of them again at
/// routing difficulty high.
pub fn audit_cells(family: &Family) -> Vec<Cell> {
    let base = study_cells(family.split());
    let high = base.iter().map(|c| Cell {
        r: Routing::High,
        ..*c
    });
    base.iter().copied().chain(high).collect()
}

/// Every audit of one family: compiles it at its audit cells and runs the static checks
/// over them and the runtime checks on each variant.
pub fn audit_family(family: &Family) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut variants = Vec::new();
    for cell in audit_cells(family) {
        match compile(family, &cell) {
            Ok(v) => variants.push(v),
            Err(e) => findings.push(Finding {
                check: "compiles",
                family: family.name.clone(),
                cell: Some(cell),
                detail: e.to_string(),
            }),
        }
    }
    findings.extend(check_nested_menus(family));
    findings.extend(check_matched(family, &variants));
    for v in &variants {
        findings.extend(audit_variant(v));
    }
    findings.extend(check_encodings(&variants));
    findings
}

/// The runtime checks of one variant: certified minimum, valid orders, observation
/// structure and legal misses, and grader mutations.
pub fn audit_variant(variant: &Variant) -> Vec<Finding> {
    let mut findings = Vec::new();
    findings.extend(certify::check_minimum(variant));
    findings.extend(check_orders(variant));
    findings.extend(check_observations(variant));
    findings.extend(check_mutations(variant));
    findings
}

pub(crate) fn finding(check: &'static str, v: &Variant, detail: impl Into<String>) -> Finding {
    Finding {
        check,
        family: v.family.clone(),
        cell: Some(v.cell),
        detail: detail.into(),
    }
}
