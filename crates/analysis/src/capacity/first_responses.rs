//! Reasoning-only first responses (paper Table 8, Appendix E): how the first response
//! to a 128-schema request ends when it ends at the completion cap, for the
//! configurations whose usage reports reasoning tokens.
//!
//! Owns: the `first_responses` table, read from this study's request rows
//! (`requests.parquet`, see [`tbb_tables::requests`]) — one row per (completion cap,
//! configuration), the pooled row of each cap first (`configuration = "all"`,
//! `organization = "all"`), then the configurations by name:
//!
//! * `completion_cap`, `configuration`, `organization`, `visible_schemas` (always 128);
//! * `configurations`: reporting configurations in the row (1, or all of them pooled);
//! * `first_responses`: episodes whose first request carried 128 visible schemas;
//! * `infra_failed`: of those, the ones whose first request ended the episode as an
//!   infrastructure failure (no response after the retries, or usage missing or not
//!   counts): they are counted here and in `first_responses`, never as cut, since
//!   there is no counted response to classify;
//! * `cut`: first responses that ended at the cap; `cut_share` = `cut /
//!   first_responses` (null when there is none);
//! * `reasoning_only` (no visible text, no call, every completion token reasoning),
//!   `cut_in_tool_call`, `cut_in_text`, and `cut_empty` (cut after 0 completion tokens),
//!   which add up to `cut`; `reasoning_only_share`, `cut_in_tool_call_share` and
//!   `cut_in_text_share` are of `cut` (null when nothing was cut);
//! * `never_truncating`: configurations in the row with no cut first response (0 or 1
//!   per configuration; the count pooled).
//!
//! Decisions (the paper leaves them to the reader):
//! * A configuration's usage *reports reasoning tokens* when at least one of its request
//!   rows in the study has `reasoning_source = "reported"`: the provider's usage payload
//!   carried the count. `derived` (the wire client computed it from other figures) and
//!   `unknown` do not qualify. One reported response is enough, because a provider may
//!   leave the detail out of some payloads (a failed request has none at all).
//! * A first response *ended at the cap* when its normalised `finish_reason` is
//!   `length`; which of the four ways it ended is its `response_kind` (the rules of
//!   [`tbb_tables::requests::ResponseKind`], which also make a reasoning-only cut
//!   independent of whether the reasoning count was reported).
//! * The first request is the row with `turn = 0`; an episode is selected by that
//!   request's `visible_schemas`, not by its cell's V, so any arm whose first request
//!   shows a narrower menu is left out. Every arm and repeat is pooled (the paper pools
//!   its blocks); completion caps are kept apart, because "the cap" differs.
//!
//! Invariants: counts are exact integers from the rows; row order does not matter; a
//! study with no reporting configuration gets its pooled rows with zero counts.
//!
//! Never: reads transcripts or files (the pipeline hands it the request rows), or
//! decides what a response held (the requests table did).

use std::collections::{BTreeMap, BTreeSet};

use super::truncation::ALL;
use crate::{AnalysisError, Context, Design, Input, NoParams, Output, Produced, Requests, Typed};
use tbb_tables::analyses::first_responses::FirstResponsesRow;
use tbb_tables::levels::{FinishReason, ReasoningSource, ResponseKind};
use tbb_tables::rows::RequestRow;
use tbb_tables::TableRow;

/// Name in error messages and of the table.
const KIND: &str = "first_responses";

/// The menu size of the first request the table reads.
pub const VISIBLE_SCHEMAS: u32 = 128;

/// The `first_responses` analysis kind.
pub struct FirstResponses;

impl Typed for FirstResponses {
    type Params = NoParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "first_responses/1";
    // The episodes only name each configuration's organization.
    const INPUTS: &'static [Input] = &[Input::Requests, Input::Episodes];
    const OUTPUTS: &'static [&'static str] = &[FirstResponsesRow::TABLE];

    fn needs(design: &Design) -> Option<String> {
        let has_128 = design
            .cells
            .iter()
            .any(|c| u32::from(c.v) == VISIBLE_SCHEMAS);
        (!has_128).then(|| {
            "it reads first requests that carried 128 schemas; the manifest has no cell with v = 128"
                .into()
        })
    }

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let organizations: BTreeMap<&str, &str> = input
            .episodes
            .iter()
            .map(|e| (e.configuration.as_str(), e.organization.as_str()))
            .collect();
        let rows = count(input.requests)?;
        let batch = FirstResponsesRow::to_batch(&table_rows(&rows, &organizations))?;
        Ok(vec![Output {
            table: FirstResponsesRow::TABLE,
            batch,
        }]
        .into())
    }
}

/// The counts of one row of the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Completion cap.
    pub completion_cap: u32,
    /// Configuration, or [`ALL`].
    pub configuration: String,
    /// Reporting configurations counted.
    pub configurations: u32,
    /// Episodes whose first request carried 128 schemas.
    pub first_responses: u32,
    /// ... whose first request was an infrastructure failure.
    pub infra_failed: u32,
    /// ... whose first response ended at the cap.
    pub cut: u32,
    /// Cut with reasoning tokens only.
    pub reasoning_only: u32,
    /// Cut inside a tool call.
    pub cut_in_tool_call: u32,
    /// Cut inside visible text.
    pub cut_in_text: u32,
    /// Cut after 0 completion tokens.
    pub cut_empty: u32,
    /// Configurations with no cut first response.
    pub never_truncating: u32,
}

impl Counts {
    fn add(&mut self, first: &RequestRow) {
        let q = &first.request;
        self.first_responses += 1;
        if q.infra_cause.is_some() || q.response_kind.is_none() {
            self.infra_failed += 1;
            return;
        }
        if q.finish_reason != Some(FinishReason::Length) {
            return;
        }
        self.cut += 1;
        match q.response_kind {
            Some(ResponseKind::ReasoningOnly) => self.reasoning_only += 1,
            Some(ResponseKind::CutInToolCall) => self.cut_in_tool_call += 1,
            Some(ResponseKind::CutInText) => self.cut_in_text += 1,
            _ => self.cut_empty += 1,
        }
    }

    fn pool(&mut self, other: &Counts) {
        self.configurations += other.configurations;
        self.first_responses += other.first_responses;
        self.infra_failed += other.infra_failed;
        self.cut += other.cut;
        self.reasoning_only += other.reasoning_only;
        self.cut_in_tool_call += other.cut_in_tool_call;
        self.cut_in_text += other.cut_in_text;
        self.cut_empty += other.cut_empty;
        self.never_truncating += other.never_truncating;
    }
}

/// The rows of the table: per completion cap, the pooled row, then each reporting
/// configuration by name. Reads the requests in two passes: which configurations
/// report reasoning, then their first requests.
pub fn count(requests: &dyn Requests) -> Result<Vec<Counts>, AnalysisError> {
    let mut any = false;
    let mut reporting: BTreeSet<String> = BTreeSet::new();
    let mut caps: BTreeSet<u32> = BTreeSet::new();
    requests.for_each(&mut |r| {
        any = true;
        caps.insert(r.episode.completion_cap);
        let config = r.episode.configuration.as_str();
        if r.request.reasoning_source == Some(ReasoningSource::Reported)
            && !reporting.contains(config)
        {
            reporting.insert(config.to_string());
        }
    })?;
    if !any {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "the study has no provider request".into(),
        });
    }
    // Every reporting configuration gets a row at every cap it ran at, even with no
    // first request of 128 schemas there (its counts are then 0).
    let mut per: BTreeMap<u32, BTreeMap<String, Counts>> = BTreeMap::new();
    requests.for_each(&mut |r| {
        let config = r.episode.configuration.as_str();
        if !reporting.contains(config) {
            return;
        }
        let cap = r.episode.completion_cap;
        let at_cap = per.entry(cap).or_default();
        if !at_cap.contains_key(config) {
            at_cap.insert(
                config.to_string(),
                Counts {
                    completion_cap: cap,
                    configuration: config.to_string(),
                    configurations: 1,
                    ..Counts::default()
                },
            );
        }
        if let (Some(c), true) = (
            at_cap.get_mut(config),
            r.request.turn == 0 && r.request.visible_schemas == VISIBLE_SCHEMAS,
        ) {
            c.add(r);
        }
    })?;
    let mut out = Vec::new();
    for cap in caps {
        let mut pooled = Counts {
            completion_cap: cap,
            configuration: ALL.to_string(),
            ..Counts::default()
        };
        let mut mine: Vec<Counts> = per
            .remove(&cap)
            .map(|at_cap| at_cap.into_values().collect())
            .unwrap_or_default();
        for c in &mut mine {
            c.never_truncating = u32::from(c.cut == 0);
            pooled.pool(c);
        }
        out.push(pooled);
        out.extend(mine);
    }
    Ok(out)
}

/// `num / den`, null when `den` is 0.
fn share(num: u32, den: u32) -> Option<f64> {
    (den > 0).then(|| f64::from(num) / f64::from(den))
}

/// The table's rows: each count with its organization and shares.
fn table_rows(rows: &[Counts], organizations: &BTreeMap<&str, &str>) -> Vec<FirstResponsesRow> {
    let organization = |c: &Counts| -> String {
        if c.configuration == ALL {
            ALL.to_string()
        } else {
            organizations
                .get(c.configuration.as_str())
                .map_or_else(String::new, std::string::ToString::to_string)
        }
    };
    rows.iter()
        .map(|r| FirstResponsesRow {
            completion_cap: r.completion_cap,
            configuration: r.configuration.clone(),
            organization: organization(r),
            visible_schemas: VISIBLE_SCHEMAS,
            configurations: r.configurations,
            first_responses: r.first_responses,
            infra_failed: r.infra_failed,
            cut: r.cut,
            cut_share: share(r.cut, r.first_responses),
            reasoning_only: r.reasoning_only,
            reasoning_only_share: share(r.reasoning_only, r.cut),
            cut_in_tool_call: r.cut_in_tool_call,
            cut_in_tool_call_share: share(r.cut_in_tool_call, r.cut),
            cut_in_text: r.cut_in_text,
            cut_in_text_share: share(r.cut_in_text, r.cut),
            cut_empty: r.cut_empty,
            never_truncating: r.never_truncating,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use tbb_tables::levels::{
        Actor, Delivery, Encoding, InfraCause, Menu, PromptVariant, Routing, Workflow,
    };
    use tbb_tables::rows::{EpisodeColumns, RequestColumns};

    /// A request row of `config`'s episode `episode` at `cap`: its `turn`, the schemas
    /// it showed, how it ended (`None`: the request failed), and the reasoning source.
    fn row(
        config: &str,
        episode: &str,
        turn: u32,
        schemas: u32,
        ended: Option<(FinishReason, ResponseKind)>,
        source: ReasoningSource,
    ) -> RequestRow {
        RequestRow {
            episode: Arc::new(EpisodeColumns {
                study: "t8".into(),
                episode_key: blake3::hash(episode.as_bytes()).into(),
                transcript_ref: episode.into(),
                configuration: config.into(),
                block: "main".into(),
                arm: "routed".into(),
                lane: Menu::Routed,
                repair: PromptVariant::Base,
                delivery: Delivery::Native,
                actor: Actor::Model,
                completion_cap: 1024,
                repeat: 0,
                schedule: "routed".into(),
                schedule_position: None,
                variant_id: episode.into(),
                family: "f".into(),
                v: schemas,
                w: Workflow::Low,
                d: Encoding::Raw,
                r: Routing::Low,
                depth: None,
            }),
            request: RequestColumns {
                turn,
                visible_schemas: schemas,
                prompt_tokens: ended.map(|_| 9_000),
                cached_tokens: ended.map(|_| 0),
                completion_tokens: ended.map(|_| 1024),
                reasoning_tokens: ended
                    .filter(|_| source == ReasoningSource::Reported)
                    .map(|_| 900),
                reasoning_source: ended.map(|_| source),
                finish_reason: ended.map(|(f, _)| f),
                finish_reason_raw: ended.map(|(f, _)| f.to_string()),
                response_kind: ended.map(|(_, k)| k),
                executed_call: false,
                cumulative_calls: 0,
                attempts: Some(1),
                infra_cause: ended.is_none().then_some(InfraCause::ServerError),
                wall_ms: 1,
                cumulative_tokens: 0,
            },
        }
    }

    type Ended = Option<(FinishReason, ResponseKind)>;
    const REASONING_CUT: Ended = Some((FinishReason::Length, ResponseKind::ReasoningOnly));
    const CALL_CUT: Ended = Some((FinishReason::Length, ResponseKind::CutInToolCall));
    const TEXT_CUT: Ended = Some((FinishReason::Length, ResponseKind::CutInText));
    const EMPTY_CUT: Ended = Some((FinishReason::Length, ResponseKind::Empty));
    const CALL: Ended = Some((FinishReason::ToolCalls, ResponseKind::ToolCall));
    const ANSWER: Ended = Some((FinishReason::Stop, ResponseKind::Answer));
    const REPORTED: ReasoningSource = ReasoningSource::Reported;

    /// Three reporting configurations and one that does not report:
    /// * `heavy`: five first responses at 128 (reasoning-only ×2, in a call, in text,
    ///   one call), one failed first request, a reasoning-only cut at V = 8 (left out)
    ///   and one on a second turn (left out);
    /// * `mild`: a cut after 0 tokens, a call; its only reported row is a second turn;
    /// * `steady`: two calls at 128, never cut;
    /// * `hidden` (reasoning `unknown`): cut reasoning-only at 128, left out.
    fn panel() -> Vec<RequestRow> {
        vec![
            row("heavy", "h1", 0, 128, REASONING_CUT, REPORTED),
            row("heavy", "h2", 0, 128, REASONING_CUT, REPORTED),
            row("heavy", "h3", 0, 128, CALL_CUT, REPORTED),
            row("heavy", "h4", 0, 128, TEXT_CUT, REPORTED),
            row("heavy", "h5", 0, 128, CALL, REPORTED),
            row("heavy", "h5", 1, 8, REASONING_CUT, REPORTED),
            row("heavy", "h6", 0, 128, None, REPORTED),
            row("heavy", "h7", 0, 8, REASONING_CUT, REPORTED),
            row("mild", "m1", 0, 128, EMPTY_CUT, ReasoningSource::Unknown),
            row("mild", "m2", 0, 128, CALL, ReasoningSource::Unknown),
            row("mild", "m2", 1, 8, ANSWER, REPORTED),
            row("steady", "s1", 0, 128, CALL, REPORTED),
            row("steady", "s2", 0, 128, CALL, REPORTED),
            row("steady", "s2", 1, 8, ANSWER, REPORTED),
            row(
                "hidden",
                "x1",
                0,
                128,
                REASONING_CUT,
                ReasoningSource::Unknown,
            ),
            row("hidden", "x2", 0, 128, TEXT_CUT, ReasoningSource::Derived),
        ]
    }

    #[test]
    fn first_responses_by_hand() {
        let mut rows = panel();
        // Row order does not matter.
        rows.reverse();
        let out = count(&rows).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = out.iter().map(|c| c.configuration.as_str()).collect();
        assert_eq!(
            names,
            ["all", "heavy", "mild", "steady"],
            "hidden is left out"
        );
        let heavy = &out[1];
        assert_eq!(
            (heavy.first_responses, heavy.infra_failed, heavy.cut),
            (6, 1, 4)
        );
        assert_eq!(
            (
                heavy.reasoning_only,
                heavy.cut_in_tool_call,
                heavy.cut_in_text,
                heavy.cut_empty
            ),
            (2, 1, 1, 0)
        );
        assert_eq!(heavy.never_truncating, 0);
        let mild = &out[2];
        assert_eq!((mild.first_responses, mild.cut, mild.cut_empty), (2, 1, 1));
        assert_eq!(mild.never_truncating, 0);
        let steady = &out[3];
        assert_eq!((steady.first_responses, steady.cut), (2, 0));
        assert_eq!(steady.never_truncating, 1);
        let all = &out[0];
        assert_eq!(
            *all,
            Counts {
                completion_cap: 1024,
                configuration: "all".into(),
                configurations: 3,
                first_responses: 10,
                infra_failed: 1,
                cut: 5,
                reasoning_only: 2,
                cut_in_tool_call: 1,
                cut_in_text: 1,
                cut_empty: 1,
                never_truncating: 1,
            }
        );
    }

    #[test]
    fn the_table_holds_shares_of_the_cut_and_nulls_where_nothing_was_cut() {
        let organizations = BTreeMap::from([("heavy", "H"), ("mild", "M"), ("steady", "S")]);
        let rows = count(&panel()).unwrap_or_else(|e| panic!("{e}"));
        let table = table_rows(&rows, &organizations);
        let f = |share: fn(&FirstResponsesRow) -> Option<f64>| -> Vec<Option<f64>> {
            table.iter().map(share).collect()
        };
        assert_eq!(
            f(|r| r.reasoning_only_share),
            [Some(2.0 / 5.0), Some(2.0 / 4.0), Some(0.0), None]
        );
        assert_eq!(
            f(|r| r.cut_share),
            [Some(5.0 / 10.0), Some(4.0 / 6.0), Some(0.5), Some(0.0)]
        );
        let orgs: Vec<&str> = table.iter().map(|r| r.organization.as_str()).collect();
        assert_eq!(orgs, ["all", "H", "M", "S"]);
    }

    #[test]
    fn no_reporting_configuration_gives_an_empty_pooled_row() {
        let rows: Vec<RequestRow> = panel()
            .into_iter()
            .filter(|r| r.episode.configuration == "hidden")
            .collect();
        let out = count(&rows).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].configurations, out[0].first_responses), (0, 0));
        assert!(
            count(&Vec::new()).is_err(),
            "no request at all is missing data"
        );
    }
}
