//! `first_responses.parquet`, written by the `first_responses` analysis: how the first
//! response to a 128-schema request ends when it ends at the completion cap, for the
//! configurations whose usage reports reasoning tokens.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `first_responses`: one completion cap and configuration, or the cap's
/// pooled row (`configuration = "all"`, `organization = "all"`). The four ways a cut
/// response ended (`reasoning_only`, `cut_in_tool_call`, `cut_in_text`, `cut_empty`)
/// add up to `cut`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstResponsesRow {
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Schemas visible in the first request read (always 128).
    pub visible_schemas: u32,
    /// Reporting configurations in the row (1, or all of them pooled).
    pub configurations: u32,
    /// Episodes whose first request carried 128 visible schemas.
    pub first_responses: u32,
    /// Of those, first requests that ended the episode as an infrastructure failure
    /// (never counted as cut).
    pub infra_failed: u32,
    /// First responses that ended at the cap (`finish_reason = length`).
    pub cut: u32,
    /// `cut / first_responses`; null when there is none.
    pub cut_share: Option<f64>,
    /// Cut with no visible text, no call, every completion token reasoning.
    pub reasoning_only: u32,
    /// `reasoning_only / cut`; null when nothing was cut.
    pub reasoning_only_share: Option<f64>,
    /// Cut inside a tool call.
    pub cut_in_tool_call: u32,
    /// `cut_in_tool_call / cut`; null when nothing was cut.
    pub cut_in_tool_call_share: Option<f64>,
    /// Cut inside visible text.
    pub cut_in_text: u32,
    /// `cut_in_text / cut`; null when nothing was cut.
    pub cut_in_text_share: Option<f64>,
    /// Cut after 0 completion tokens.
    pub cut_empty: u32,
    /// Configurations in the row with no cut first response (0 or 1 per configuration;
    /// the count pooled).
    pub never_truncating: u32,
}

impl TableRow for FirstResponsesRow {
    const TABLE: &'static str = "first_responses";
}
