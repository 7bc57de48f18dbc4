//! What the grader said of a run's episodes, counted: verified successes (VTS), task
//! failures by terminal flag, and infrastructure failures — by where each verdict came
//! from (episodes run in this apply, cached transcripts graded again, verdicts reused
//! from the cache), and the words a person reads for them.
//!
//! Owns: [`Tally`] and [`Verdicts`], which the episodes stage's end
//! ([`super::events::Event::StageFinished`]) and an apply's [`super::apply::Summary`]
//! carry, and their text. The words are chosen so that they cannot be read as a node's
//! error: a node error is tbb failing to produce a verdict (`errors`), a task failure is
//! the grader's verdict on an episode that ran (`task failures`), and an
//! infrastructure failure is an episode the route ended (`infrastructure failures`).
//!
//! Never: decides a verdict (the grader did, and the row holds it) or reads anything
//! but rows.

use std::collections::BTreeMap;

use serde::Serialize;

use tbb_core::grade::TerminalFlag;
use tbb_report::format::count;
use tbb_tables::rows::EpisodeRow;

/// The verdicts of some episodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Episodes counted.
    pub episodes: u64,
    /// Verified task successes: every obligation met.
    pub verified_successes: u64,
    /// Episodes that ran and failed their task (infrastructure failures apart).
    pub task_failures: u64,
    /// Episodes the route ended (counted as failures of their configuration, apart
    /// from task failures).
    pub infra_failures: u64,
    /// The task failures by terminal flag (as `terminal_flag` in the episodes table
    /// names it).
    pub terminal_flags: BTreeMap<String, u64>,
}

impl Tally {
    /// Counts one episode's verdict.
    pub fn add(&mut self, row: &EpisodeRow) {
        self.verdict(
            row.vts,
            row.infra_failure,
            row.terminal_flag.map(TerminalFlag::name),
        );
    }

    /// Counts one verdict: an infrastructure failure whatever its other fields say, else
    /// a verified success, else a task failure under its terminal flag.
    fn verdict(&mut self, vts: bool, infra_failure: bool, terminal_flag: Option<&str>) {
        self.episodes += 1;
        if infra_failure {
            self.infra_failures += 1;
        } else if vts {
            self.verified_successes += 1;
        } else {
            self.task_failures += 1;
            let flag = terminal_flag.unwrap_or("unflagged");
            *self.terminal_flags.entry(flag.to_string()).or_default() += 1;
        }
    }

    /// Whether it counts no episode.
    pub fn is_empty(&self) -> bool {
        self.episodes == 0
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Tally) {
        self.episodes += other.episodes;
        self.verified_successes += other.verified_successes;
        self.task_failures += other.task_failures;
        self.infra_failures += other.infra_failures;
        for (flag, n) in &other.terminal_flags {
            *self.terminal_flags.entry(flag.clone()).or_default() += n;
        }
    }

    /// `1 verified success, 2 task failures (truncation ×2), 0 infrastructure
    /// failures`: the flags in the grader's order of precedence.
    pub fn text(&self) -> String {
        let flags = if self.terminal_flags.is_empty() {
            String::new()
        } else {
            let known = TerminalFlag::ALL.iter().map(|f| f.name());
            let others = self
                .terminal_flags
                .keys()
                .map(String::as_str)
                .filter(|f| TerminalFlag::ALL.iter().all(|k| k.name() != *f));
            let listed: Vec<String> = known
                .chain(others)
                .filter_map(|f| self.terminal_flags.get(f).map(|n| format!("{f} ×{n}")))
                .collect();
            format!(" ({})", listed.join(", "))
        };
        format!(
            "{}, {}{flags}, {}",
            plural(
                self.verified_successes,
                "verified success",
                "verified successes"
            ),
            plural(self.task_failures, "task failure", "task failures"),
            plural(
                self.infra_failures,
                "infrastructure failure",
                "infrastructure failures"
            ),
        )
    }
}

/// `n` and the word, singular or plural.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// The verdicts of an apply's episodes, by where each came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verdicts {
    /// Episodes run and graded in this apply.
    pub run: Tally,
    /// Cached transcripts graded again (their grade node reran; nothing was sent).
    #[serde(skip_serializing_if = "Tally::is_empty")]
    pub regraded: Tally,
    /// Verdicts reused from the cache (with those another process sharing the cache
    /// ran meanwhile). Counted when the apply reads every row to publish the tables:
    /// absent at the end of the episodes stage, of a shard, and of a run a stopped
    /// route kept from publishing.
    #[serde(skip_serializing_if = "Tally::is_empty")]
    pub cached: Tally,
}

impl Verdicts {
    /// The episodes stage's end, after the stage's name: `2 run: 0 verified successes,
    /// 2 task failures (truncation ×2), 0 infrastructure failures; no errors`
    /// (`errors`: the stage's nodes that produced no verdict).
    pub fn stage_text(&self, errors: u64) -> String {
        let mut graded = self.run.clone();
        graded.merge(&self.regraded);
        let regraded = if self.regraded.is_empty() {
            String::new()
        } else {
            format!(
                ", {} regraded from the cache",
                count(self.regraded.episodes)
            )
        };
        format!(
            "{} run{regraded}: {}; {}",
            count(self.run.episodes),
            graded.text(),
            errors_text(errors)
        )
    }

    /// The summary's lines on episodes: those run (and regraded) in this apply, then
    /// those reused from the cache, each with its verdicts; none when no episode was
    /// counted.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.run.is_empty() {
            lines.push(format!(
                "{} run: {}",
                count(self.run.episodes),
                self.run.text()
            ));
        }
        if !self.regraded.is_empty() {
            lines.push(format!(
                "{} regraded from the cache: {}",
                count(self.regraded.episodes),
                self.regraded.text()
            ));
        }
        if !self.cached.is_empty() {
            lines.push(format!(
                "{} cached: {}",
                count(self.cached.episodes),
                self.cached.text()
            ));
        }
        lines
    }
}

/// `no errors`, `1 error`, `3 errors`: nodes that produced no result (tbb's failures,
/// listed at the end of the run), never an episode's verdict.
pub fn errors_text(errors: u64) -> String {
    match errors {
        0 => "no errors".to_string(),
        n => format!("{} (listed at the end)", plural(n, "error", "errors")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(outcomes: &[(bool, bool, Option<&str>)]) -> Tally {
        let mut t = Tally::default();
        for &(vts, infra, flag) in outcomes {
            t.verdict(vts, infra, flag);
        }
        t
    }

    #[test]
    fn a_tally_reads_as_verdicts_with_the_flags_in_the_graders_order() {
        let t = tally(&[
            (false, false, Some("wrong_conclusion")),
            (false, false, Some("truncation")),
            (false, false, Some("truncation")),
            (true, false, None),
            (false, true, Some("infra_failure")),
        ]);
        assert_eq!(
            t.text(),
            "1 verified success, 3 task failures (truncation ×2, wrong_conclusion ×1), \
             1 infrastructure failure"
        );
        assert_eq!(
            tally(&[(true, false, None), (true, false, None)]).text(),
            "2 verified successes, 0 task failures, 0 infrastructure failures"
        );
    }

    #[test]
    fn the_stage_and_the_summary_say_run_regraded_and_cached_apart_from_errors() {
        let v = Verdicts {
            run: tally(&[(false, false, Some("truncation")); 2]),
            ..Verdicts::default()
        };
        assert_eq!(
            v.stage_text(0),
            "2 run: 0 verified successes, 2 task failures (truncation ×2), 0 infrastructure \
             failures; no errors"
        );
        assert_eq!(
            v.summary_lines(),
            [
                "2 run: 0 verified successes, 2 task failures (truncation ×2), 0 infrastructure \
              failures"
            ]
        );
        let v = Verdicts {
            regraded: tally(&[(true, false, None)]),
            cached: tally(&[(true, false, None), (false, true, None)]),
            ..v
        };
        assert_eq!(
            v.stage_text(1),
            "2 run, 1 regraded from the cache: 1 verified success, 2 task failures \
             (truncation ×2), 0 infrastructure failures; 1 error (listed at the end)"
        );
        assert_eq!(v.summary_lines().len(), 3);
        assert!(v.summary_lines()[2].starts_with("2 cached: 1 verified success, 0 task"));
        let cached_only = Verdicts {
            cached: tally(&[(true, false, None)]),
            ..Verdicts::default()
        };
        assert_eq!(
            cached_only.summary_lines(),
            ["1 cached: 1 verified success, 0 task failures, 0 infrastructure failures"]
        );
        assert!(Verdicts::default().summary_lines().is_empty());
    }
}
