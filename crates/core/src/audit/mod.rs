//! Static and runtime audits of the generator and the grader (the paper's Appendix B).
//!
//! Owns the checks that every family, at every cell of its study, compiles into matched
//! variants that differ only in their pressure, that the certified minimum is right,
//! that every encoding carries the same facts, and that the grader accepts every valid
//! program and rejects each kind of defect with the right failure record.
//!
//! Each check returns [`Finding`]s rather than panicking, so the same code serves the
//! test suite (which requires no findings) and a user auditing their own families
//! (`tbb audit`). [`audit`] runs every check over a set of families and tallies them
//! in a [`Summary`]: per check, the cases it ran and how many failed. A case is one
//! application of a check to its subject — a cell (`compiles`), a family
//! (`nested_menus`, `matched`, `siblings`, `regeneration`, `encodings`) or a compiled
//! variant (`certified_minimum`, `alternative_orders`, `observations`, `grader`, and
//! `links` on linked variants) — and fails when the check finds anything in it.
//!
//! Never: changes a family, a variant or a verdict; it only compiles, executes and
//! grades.

mod certify;
mod matched;
mod mutations;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::compile::{compile, study_cells, Cell, Encoding, Routing, Variant};
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

/// What a check is applied to: one case per subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A cell of a family.
    Cell,
    /// A family.
    Family,
    /// A compiled variant.
    Variant,
}

impl Subject {
    /// Its plural, for summaries.
    pub fn plural(self) -> &'static str {
        match self {
            Subject::Cell => "cells",
            Subject::Family => "families",
            Subject::Variant => "variants",
        }
    }
}

/// Every check, in the order an audit runs them, with what it is applied to.
pub const CHECKS: [(&str, Subject); 11] = [
    ("compiles", Subject::Cell),
    ("nested_menus", Subject::Family),
    ("matched", Subject::Family),
    ("siblings", Subject::Family),
    ("regeneration", Subject::Family),
    ("certified_minimum", Subject::Variant),
    ("alternative_orders", Subject::Variant),
    ("observations", Subject::Variant),
    ("links", Subject::Variant),
    ("grader", Subject::Variant),
    ("encodings", Subject::Family),
];

/// One check's tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// The check's name (as its findings name it).
    pub check: &'static str,
    /// What it is applied to.
    pub subject: Subject,
    /// Cases run.
    pub cases: u64,
    /// Cases in which it found something.
    pub failed: u64,
}

impl Tally {
    /// Cases that passed.
    pub fn passed(&self) -> u64 {
        self.cases - self.failed
    }
}

/// What an audit ran and found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Families audited.
    pub families: u64,
    /// Variants compiled and audited.
    pub variants: u64,
    /// One tally per check, in [`CHECKS`] order.
    pub checks: Vec<Tally>,
    /// Every finding, in the order the checks found them (families in the order given).
    pub findings: Vec<Finding>,
}

impl Default for Summary {
    fn default() -> Summary {
        Summary {
            families: 0,
            variants: 0,
            checks: CHECKS
                .iter()
                .map(|&(check, subject)| Tally {
                    check,
                    subject,
                    cases: 0,
                    failed: 0,
                })
                .collect(),
            findings: Vec::new(),
        }
    }
}

impl Summary {
    /// Every check passed every case.
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }

    /// The tallies of the checks that failed some case.
    pub fn failed_checks(&self) -> impl Iterator<Item = &Tally> {
        self.checks.iter().filter(|t| t.failed > 0)
    }

    /// The findings of one check, in order.
    pub fn findings_of<'a>(&'a self, check: &'a str) -> impl Iterator<Item = &'a Finding> {
        self.findings.iter().filter(move |f| f.check == check)
    }

    fn tally(&mut self, check: &'static str) -> &mut Tally {
        let at = match self.checks.iter().position(|t| t.check == check) {
            Some(i) => i,
            None => {
                self.checks.push(Tally {
                    check,
                    subject: Subject::Variant,
                    cases: 0,
                    failed: 0,
                });
                self.checks.len() - 1
            }
        };
        &mut self.checks[at]
    }

    /// One case of each of `checks`, with what they found in it. A finding of a check
    /// not named counts as a failed case of its own.
    fn record(&mut self, checks: &[&'static str], findings: Vec<Finding>) {
        for &check in checks {
            let failed = findings.iter().any(|f| f.check == check);
            let t = self.tally(check);
            t.cases += 1;
            t.failed += u64::from(failed);
        }
        let mut others: Vec<&'static str> = findings
            .iter()
            .map(|f| f.check)
            .filter(|c| !checks.contains(c))
            .collect();
        others.sort_unstable();
        others.dedup();
        for check in others {
            let t = self.tally(check);
            t.cases += 1;
            t.failed += 1;
        }
        self.findings.extend(findings);
    }

    /// Adds another summary's counts and findings after this one's.
    fn merge(&mut self, other: Summary) {
        self.families += other.families;
        self.variants += other.variants;
        for t in other.checks {
            let mine = self.tally(t.check);
            mine.cases += t.cases;
            mine.failed += t.failed;
        }
        self.findings.extend(other.findings);
    }
}

/// Every audit of every family, on up to `threads` threads (families are independent;
/// the summary is the same for any number of threads: tallies add up and findings stay
/// in the families' order).
pub fn audit(families: &[Family], threads: usize) -> Summary {
    let threads = threads.clamp(1, families.len().max(1));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Summary)>> = Mutex::new(Vec::with_capacity(families.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(family) = families.get(i) else { break };
                let summary = audit_family_summary(family);
                done.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((i, summary));
            });
        }
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    done.sort_by_key(|(i, _)| *i);
    let mut total = Summary::default();
    for (_, s) in done {
        total.merge(s);
    }
    total
}

/// Every audit of one family: compiles it at its audit cells and runs the static checks
/// over them and the runtime checks on each variant.
pub fn audit_family(family: &Family) -> Vec<Finding> {
    audit_family_summary(family).findings
}

/// [`audit_family`], tallied.
pub fn audit_family_summary(family: &Family) -> Summary {
    let mut summary = Summary {
        families: 1,
        ..Summary::default()
    };
    let mut variants = Vec::new();
    for cell in audit_cells(family) {
        match compile(family, &cell) {
            Ok(v) => {
                summary.record(&["compiles"], Vec::new());
                variants.push(v);
            }
            Err(e) => summary.record(
                &["compiles"],
                vec![Finding {
                    check: "compiles",
                    family: family.name.clone(),
                    cell: Some(cell),
                    detail: e.to_string(),
                }],
            ),
        }
    }
    summary.record(&["nested_menus"], check_nested_menus(family));
    summary.record(
        &["matched", "siblings", "regeneration"],
        check_matched(family, &variants),
    );
    for v in &variants {
        summary.variants += 1;
        audit_variant_into(v, &mut summary);
    }
    summary.record(&["encodings"], check_encodings(&variants));
    summary
}

/// The runtime checks of one variant: certified minimum, valid orders, observation
/// structure and legal misses, and grader mutations.
pub fn audit_variant(variant: &Variant) -> Vec<Finding> {
    let mut summary = Summary::default();
    audit_variant_into(variant, &mut summary);
    summary.findings
}

fn audit_variant_into(v: &Variant, summary: &mut Summary) {
    summary.record(&["certified_minimum"], certify::check_minimum(v));
    summary.record(&["alternative_orders"], check_orders(v));
    let observations: &[&'static str] = if v.cell.d == Encoding::Linked {
        &["observations", "links"]
    } else {
        &["observations"]
    };
    summary.record(observations, check_observations(v));
    summary.record(&["grader"], check_mutations(v));
}

pub(crate) fn finding(check: &'static str, v: &Variant, detail: impl Into<String>) -> Finding {
    Finding {
        check,
        family: v.family.clone(),
        cell: Some(v.cell),
        detail: detail.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::Workflow;
    use crate::family::repository_families;

    fn found(check: &'static str, detail: &str) -> Finding {
        Finding {
            check,
            family: "f".into(),
            cell: None,
            detail: detail.into(),
        }
    }

    fn tally(s: &Summary, check: &str) -> (u64, u64, u64) {
        s.checks
            .iter()
            .find(|t| t.check == check)
            .map_or((0, 0, 0), |t| (t.cases, t.passed(), t.failed))
    }

    /// A case fails once however many findings it holds; a finding of a check the
    /// case did not name is a failed case of its own; merging adds.
    #[test]
    fn cases_are_counted_per_check_and_fail_once_each() {
        let mut s = Summary::default();
        s.record(&["grader"], Vec::new());
        s.record(
            &["grader"],
            vec![found("grader", "a"), found("grader", "b")],
        );
        s.record(&["observations", "links"], vec![found("links", "c")]);
        s.record(&["matched"], vec![found("siblings", "d")]);
        assert_eq!(tally(&s, "grader"), (2, 1, 1));
        assert_eq!(tally(&s, "observations"), (1, 1, 0));
        assert_eq!(tally(&s, "links"), (1, 0, 1));
        assert_eq!(tally(&s, "matched"), (1, 1, 0));
        assert_eq!(tally(&s, "siblings"), (1, 0, 1));
        assert_eq!(tally(&s, "encodings"), (0, 0, 0));
        assert_eq!(s.findings.len(), 4);
        assert!(!s.passed());
        let failed: Vec<&str> = s.failed_checks().map(|t| t.check).collect();
        assert_eq!(failed, ["siblings", "links", "grader"]);

        let mut other = Summary::default();
        other.record(&["grader"], vec![found("grader", "e")]);
        other.families = 1;
        s.merge(other);
        assert_eq!(tally(&s, "grader"), (3, 1, 2));
        assert_eq!(s.families, 1);
        let details: Vec<&str> = s.findings_of("grader").map(|f| f.detail.as_str()).collect();
        assert_eq!(details, ["a", "b", "e"]);
    }

    /// One family's audit: one case per audit cell, per family or per variant, links
    /// on the linked variants only; and the summary of two families is the same on one
    /// thread or two.
    #[test]
    fn an_audit_counts_cells_families_and_variants() {
        let set = repository_families();
        let harbor = set
            .get("overdue-escalation-harbor")
            .unwrap_or_else(|| panic!("no harbor"));
        let cells = audit_cells(harbor);
        let linked = cells.iter().filter(|c| c.d == Encoding::Linked).count() as u64;
        let n = cells.len() as u64;
        let one = audit_family_summary(harbor);
        assert!(one.passed(), "{:?}", one.findings);
        assert_eq!((one.families, one.variants), (1, n));
        for t in &one.checks {
            let expected = match (t.check, t.subject) {
                ("links", _) => linked,
                (_, Subject::Family) => 1,
                (_, Subject::Cell | Subject::Variant) => n,
            };
            assert_eq!((t.check, t.cases, t.failed), (t.check, expected, 0));
        }
        assert!(cells.iter().any(|c| c.w == Workflow::High));

        let two = &set.families[..2];
        let serial = audit(two, 1);
        assert_eq!(serial, audit(two, 2));
        assert_eq!(serial.families, 2);
        assert_eq!(tally(&serial, "nested_menus"), (2, 2, 0));
    }
}
