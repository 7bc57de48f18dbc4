//! `tbb audit [--json]`: the static and runtime audits of the generator and the grader
//! ([`crate::audit::audit`], the code the test suite runs) over every family of
//! `--families`, as a summary: per check, the cases it ran, passed and failed, then
//! the first failures of each failed check with what failed. Exits
//! [`super::exit_codes::CHECK_FAILED`] when any case failed.

use clap::Args;
use miette::{Diagnostic, Result};
use serde::Serialize;
use thiserror::Error;

use super::{load, print_json, Cli};
use crate::audit::{audit, Finding, Subject, Summary};
use tbb_report::format::count;

/// Failures shown per failed check (the JSON lists up to [`JSON_FAILURES`]).
const SHOWN: usize = 3;
/// Failures listed per check in the JSON.
const JSON_FAILURES: usize = 20;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// `n` subjects, in words: "1 variant", "2 variants".
fn subjects(n: u64, subject: Subject) -> String {
    let one = match subject {
        Subject::Cell => "cell",
        Subject::Family => "family",
        Subject::Variant => "variant",
    };
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {}", count(n), subject.plural())
    }
}

/// Some audit case failed.
#[derive(Debug, Error, Diagnostic)]
#[error("the audit failed: {}", failed_cases(.checks))]
#[diagnostic(
    code(tbb::audit::failed),
    help(
        "the first failures of each check are listed above; `tbb audit --json` lists up to \
         {JSON_FAILURES} per check. A failed audit means the families (or the compiler or \
         the grader) break the benchmark's guarantees: fix them before running a study"
    )
)]
pub struct AuditFailed {
    /// `(check, failed cases in words)` of every failed check.
    checks: Vec<(String, String)>,
}

fn failed_cases(checks: &[(String, String)]) -> String {
    checks
        .iter()
        .map(|(check, cases)| format!("`{check}` failed on {cases}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Serialize)]
struct JsonSummary<'a> {
    passed: bool,
    families: u64,
    variants: u64,
    findings: usize,
    checks: Vec<JsonCheck<'a>>,
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    check: &'a str,
    subject: &'static str,
    cases: u64,
    passed: u64,
    failed: u64,
    first_failures: Vec<JsonFinding<'a>>,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    family: &'a str,
    cell: Option<String>,
    detail: &'a str,
}

fn json(summary: &Summary) -> JsonSummary<'_> {
    JsonSummary {
        passed: summary.passed(),
        families: summary.families,
        variants: summary.variants,
        findings: summary.findings.len(),
        checks: summary
            .checks
            .iter()
            .map(|t| JsonCheck {
                check: t.check,
                subject: t.subject.plural(),
                cases: t.cases,
                passed: t.passed(),
                failed: t.failed,
                first_failures: summary
                    .findings_of(t.check)
                    .take(JSON_FAILURES)
                    .map(|f: &Finding| JsonFinding {
                        family: &f.family,
                        cell: f.cell.map(|c| c.to_string()),
                        detail: &f.detail,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The summary as the terminal shows it.
fn render(summary: &Summary) -> String {
    let mut out = format!(
        "Audit of {} families ({} variants):\n\n  {:<20} {:>9} {:>9} {:>9}  ON\n",
        count(summary.families),
        count(summary.variants),
        "CHECK",
        "CASES",
        "PASSED",
        "FAILED"
    );
    for t in &summary.checks {
        out.push_str(&format!(
            "  {:<20} {:>9} {:>9} {:>9}  {}\n",
            t.check,
            count(t.cases),
            count(t.passed()),
            count(t.failed),
            t.subject.plural()
        ));
    }
    let failed: Vec<_> = summary.failed_checks().collect();
    if failed.is_empty() {
        out.push_str(&format!("\nAll {} checks passed.\n", summary.checks.len()));
        return out;
    }
    for t in &failed {
        let findings: Vec<&Finding> = summary.findings_of(t.check).collect();
        out.push_str(&format!(
            "\n{} failed on {} of {}; first failures:\n",
            t.check,
            count(t.failed),
            subjects(t.cases, t.subject)
        ));
        for f in findings.iter().take(SHOWN) {
            out.push_str(&format!("  {f}\n"));
        }
        if findings.len() > SHOWN {
            out.push_str(&format!(
                "  … and {} more findings\n",
                count((findings.len() - SHOWN) as u64)
            ));
        }
    }
    out
}

pub fn exec(cli: &Cli, args: &AuditArgs) -> Result<()> {
    let set = load(&cli.families)?;
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let summary = audit(&set.families, threads);
    if args.json {
        print_json(&json(&summary));
    } else {
        say!("{}", render(&summary).trim_end());
    }
    if summary.passed() {
        return Ok(());
    }
    Err(AuditFailed {
        checks: summary
            .failed_checks()
            .map(|t| (t.check.to_string(), subjects(t.failed, t.subject)))
            .collect(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary with two failed grader cases (three findings) and one failed
    /// `links` case, as the core's tally would make it.
    fn failed_summary() -> Summary {
        let mut summary = Summary {
            families: 2,
            variants: 4,
            ..Summary::default()
        };
        for t in &mut summary.checks {
            t.cases = match t.subject {
                Subject::Family => 2,
                Subject::Cell | Subject::Variant => 4,
            };
            t.failed = match t.check {
                "grader" => 2,
                "links" => 1,
                _ => 0,
            };
        }
        let finding = |check, detail: &str| Finding {
            check,
            family: "harbor".into(),
            cell: None,
            detail: detail.into(),
        };
        summary.findings = vec![
            finding("grader", "a"),
            finding("links", "b"),
            finding("grader", "c"),
            finding("grader", "d"),
            finding("grader", "e"),
        ];
        summary
    }

    /// The failures are listed per failed check, at most three each with a count of
    /// the rest, and the error names every failed check and maps to the check-failed
    /// exit code.
    #[test]
    fn a_failed_audit_lists_its_first_failures_and_exits_check_failed() {
        let summary = failed_summary();
        let text = render(&summary);
        assert!(text.contains("links failed on 1 of 4 variants"), "{text}");
        assert!(text.contains("grader failed on 2 of 4 variants"), "{text}");
        assert!(text.contains("  … and 1 more findings"), "{text}");
        assert!(!text.contains("All 11 checks passed"), "{text}");
        assert!(
            text.find("links failed") < text.find("grader failed"),
            "{text}"
        );
        let error = AuditFailed {
            checks: summary
                .failed_checks()
                .map(|t| (t.check.to_string(), subjects(t.failed, t.subject)))
                .collect(),
        };
        assert_eq!(
            error.to_string(),
            "the audit failed: `links` failed on 1 variant, `grader` failed on 2 variants"
        );
        let report = miette::Report::new(error);
        assert_eq!(
            super::super::exit_codes::of(&report),
            super::super::exit_codes::CHECK_FAILED
        );
        let json = serde_json::to_value(json(&summary)).unwrap_or_default();
        assert_eq!(json["passed"], false);
        let grader = &json["checks"][9];
        assert_eq!(grader["check"], "grader");
        assert_eq!(
            (grader["passed"].as_u64(), grader["failed"].as_u64()),
            (Some(2), Some(2))
        );
        assert_eq!(grader["first_failures"].as_array().map(Vec::len), Some(4));
    }
}
