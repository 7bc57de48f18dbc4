//! Stage 1: the manifest as written ([`RawManifest`]), after layering, before any name
//! is looked up; and the byte spans of every value in the manifest file ([`SpanIndex`]).
//!
//! Values are kept loose here (names as strings, numbers as `i64`) so that stage 2
//! can say *which* name is unknown and *what* the allowed values are, at the value's
//! span, instead of stopping at serde's first type error. A value of the wrong type is
//! still an error (at its span, via its path), never a silent default. Unknown keys are
//! errors too: `serde_ignored` collects them, and [`known_keys`] gives the keys the
//! table at fault may hold, for "did you mean".

use serde::Deserialize;

use tbb_diag::fields::field_names;
pub use tbb_diag::spans::SpanIndex;

/// The keys the manifest's table at `table` (a dotted path; list indices and map keys
/// such as an input's table name are skipped) may hold: the fields of the struct that
/// reads it. Empty for a path that is not a table of the schema.
pub fn known_keys(table: &str) -> &'static [&'static str] {
    let parts: Vec<&str> = table
        .split('.')
        .filter(|p| !p.is_empty() && p.parse::<usize>().is_err())
        .collect();
    match parts.as_slice() {
        [] => field_names::<RawManifest>(),
        ["study"] => field_names::<RawStudy>(),
        ["families"] | ["blocks", "families"] => field_names::<RawFamilies>(),
        ["cells"] | ["blocks", "cells"] => field_names::<RawCells>(),
        ["cells", "list"] | ["blocks", "cells", "list"] => field_names::<RawCell>(),
        ["configurations"] | ["blocks", "configurations"] => field_names::<RawConfigurations>(),
        ["budgets"] | ["blocks", "budgets"] => field_names::<RawBudgets>(),
        ["arms"] => field_names::<RawArm>(),
        ["blocks"] => field_names::<RawBlock>(),
        ["analyses", "inputs", _] => field_names::<RawInput>(),
        ["toolsandbox"] => field_names::<super::toolsandbox::RawToolSandbox>(),
        _ => &[],
    }
}

/// The whole manifest. Its families, cells, configurations, caps, repeats and
/// schedule are the design of the one implicit block when `[[blocks]]` is absent, and
/// every block's defaults when it is present.
#[derive(Debug, Clone, Deserialize)]
pub struct RawManifest {
    /// Replaced by `[[arms]]`: kept only to say how to rewrite it.
    #[serde(default)]
    pub lanes: Option<toml::Value>,
    /// Replaced by `[[arms]]`: kept only to say how to rewrite it.
    #[serde(default)]
    pub repairs: Option<toml::Value>,
    /// `repeats = 1`.
    #[serde(default)]
    pub repeats: Option<i64>,
    /// `schedule = "concurrent" | "sequential" | "counterbalanced"`.
    #[serde(default)]
    pub schedule: Option<String>,
    /// `[[arms]]` (default: one arm, `baseline`).
    #[serde(default)]
    pub arms: Option<Vec<RawArm>>,
    /// `[[blocks]]` (default: one block, `main`, of the top-level design).
    #[serde(default)]
    pub blocks: Option<Vec<RawBlock>>,
    /// `[study]`.
    pub study: RawStudy,
    /// `[families]`.
    #[serde(default)]
    pub families: RawFamilies,
    /// `[cells]`.
    #[serde(default)]
    pub cells: RawCells,
    /// `[configurations]`.
    #[serde(default)]
    pub configurations: RawConfigurations,
    /// `[budgets]`.
    #[serde(default)]
    pub budgets: RawBudgets,
    /// `[[analyses]]`.
    #[serde(default)]
    pub analyses: Vec<RawAnalysis>,
    /// `[toolsandbox]`: ToolSandbox scenarios the study plays too.
    #[serde(default)]
    pub toolsandbox: Option<super::toolsandbox::RawToolSandbox>,
}

/// One `[[arms]]` entry: a name and its components (each defaults to the baseline's).
#[derive(Debug, Clone, Deserialize)]
pub struct RawArm {
    /// Its name in rows and reports.
    pub name: String,
    /// `base`, `workflow` or `interface_guide`.
    #[serde(default)]
    pub prompt: Option<String>,
    /// `routed`, `fixed`, `router` or `retrieval`.
    #[serde(default)]
    pub menu: Option<String>,
    /// How many schemas a `retrieval` menu keeps (required with it, refused without).
    #[serde(default)]
    pub k: Option<i64>,
    /// `native`.
    #[serde(default)]
    pub delivery: Option<String>,
    /// `model`.
    #[serde(default)]
    pub actor: Option<String>,
    /// A completion cap the arm pins (otherwise the block's caps).
    #[serde(default)]
    pub completion_cap: Option<i64>,
}

/// One `[[blocks]]` entry: its own product of the design; what it omits comes from the
/// top level.
#[derive(Debug, Clone, Deserialize)]
pub struct RawBlock {
    /// Its name in rows (`block` column).
    pub name: String,
    /// Families.
    #[serde(default)]
    pub families: Option<RawFamilies>,
    /// Cells.
    #[serde(default)]
    pub cells: Option<RawCells>,
    /// Configurations.
    #[serde(default)]
    pub configurations: Option<RawConfigurations>,
    /// Names of `[[arms]]` entries (default: every arm).
    #[serde(default)]
    pub arms: Option<Vec<String>>,
    /// Completion caps (`completion_caps`, `configuration_caps`).
    #[serde(default)]
    pub budgets: Option<RawBudgets>,
    /// Repeats.
    #[serde(default)]
    pub repeats: Option<i64>,
    /// The index of the block's first repeat (default 0): a block of repeats
    /// `first_repeat .. first_repeat + repeats`, so that it can rerun another block's
    /// conditions independently (the policy pilot's unchanged retry).
    #[serde(default)]
    pub first_repeat: Option<i64>,
    /// Schedule of the arms.
    #[serde(default)]
    pub schedule: Option<String>,
}

/// `[study]`.
#[derive(Debug, Clone, Deserialize)]
pub struct RawStudy {
    /// The study's name.
    pub name: String,
    /// The configuration catalogue, relative to the manifest's directory (default
    /// `configurations.toml` beside the manifest).
    #[serde(default)]
    pub catalogue: Option<String>,
}

/// `[families]`: `select = "all"`, or any of the filters (a family must pass all given).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawFamilies {
    /// `"all"`.
    #[serde(default)]
    pub select: Option<String>,
    /// Intent names.
    #[serde(default)]
    pub intents: Option<Vec<String>>,
    /// Domains (`accounting`, `email`, `file`, `calendar`).
    #[serde(default)]
    pub domains: Option<Vec<String>>,
    /// Family names.
    #[serde(default)]
    pub names: Option<Vec<String>>,
    /// Splits (`core`, `holdout`, `frontier`).
    #[serde(default)]
    pub splits: Option<Vec<String>>,
}

impl RawFamilies {
    /// Whether no filter is given (the table is absent or empty).
    pub fn is_unset(&self) -> bool {
        self.select.is_none()
            && self.intents.is_none()
            && self.domains.is_none()
            && self.names.is_none()
            && self.splits.is_none()
    }
}

/// `[cells]`: a preset or a list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawCells {
    /// `"capacity"` (the default when no list is given).
    #[serde(default)]
    pub preset: Option<String>,
    /// `[[cells.list]]`.
    #[serde(default)]
    pub list: Option<Vec<RawCell>>,
}

/// One `[[cells.list]]` entry.
#[derive(Debug, Clone, Deserialize)]
pub struct RawCell {
    /// Menu size.
    pub v: i64,
    /// Workflow level.
    pub w: String,
    /// Encoding.
    pub d: String,
    /// Routing difficulty (default `low`).
    #[serde(default)]
    pub r: Option<String>,
    /// Frontier depth.
    #[serde(default)]
    pub depth: Option<i64>,
}

/// `[configurations]`: the union of what each selector picks, in catalogue order.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawConfigurations {
    /// By name.
    #[serde(default)]
    pub names: Option<Vec<String>>,
    /// Every configuration of these organizations.
    #[serde(default)]
    pub organizations: Option<Vec<String>>,
    /// Every `provider = "sim"` configuration.
    #[serde(default)]
    pub all_sim: Option<bool>,
}

/// `[budgets]`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawBudgets {
    /// Completion caps per request (one factor level each).
    #[serde(default)]
    pub completion_caps: Option<Vec<i64>>,
    /// Completion caps of single configurations, replacing `completion_caps` for them.
    #[serde(default)]
    pub configuration_caps: Option<std::collections::BTreeMap<String, Vec<i64>>>,
    /// Tokens per episode.
    #[serde(default)]
    pub episode_budget: Option<i64>,
    /// Calls allowed above the certified minimum (only 2 is supported).
    #[serde(default)]
    pub call_slack: Option<i64>,
}

/// One `[[analyses]]` entry: `kind`, optional `inputs`, and the kind's own
/// parameters (every other key), checked by the kind in stage 2.
#[derive(Debug, Clone, Deserialize)]
pub struct RawAnalysis {
    /// Which analysis.
    pub kind: String,
    /// Tables read from other studies: `inputs = { truncation = { from = "capacity" } }`.
    #[serde(default)]
    pub inputs: Option<std::collections::BTreeMap<String, RawInput>>,
    /// The kind's parameters, as given.
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// Where one input table of an analysis comes from.
#[derive(Debug, Clone, Deserialize)]
pub struct RawInput {
    /// The study whose table it reads (its `[study] name`).
    pub from: String,
}

#[cfg(test)]
mod tests {
    use super::known_keys;

    #[test]
    fn every_table_of_the_schema_knows_its_keys() {
        assert!(known_keys("").contains(&"repeats"));
        assert!(known_keys("budgets").contains(&"episode_budget"));
        assert!(known_keys("blocks.2.budgets").contains(&"completion_caps"));
        assert!(known_keys("cells.list.0").contains(&"depth"));
        assert!(known_keys("analyses.0.inputs.truncation").contains(&"from"));
        assert!(known_keys("arms.3").contains(&"menu"));
        assert!(known_keys("budgets.episode_budget").is_empty());
    }
}
