//! The row structs of the tables the analyses publish: one struct per table, named
//! after it, in a file named after the analysis kind that writes it.
//!
//! Owns: each table's columns (name, order, type, nullability, documented meaning).
//! The kind in `tbb_analysis` fills the rows; the report and any analysis that reads
//! the table deserialise the same struct ([`crate::TableRow`]), so a renamed or retyped
//! column is a compile error rather than a report that fails to render.
//!
//! Never: computes a value (the analyses do) or formats one (the report does).

pub mod cap_crossover;
pub mod cap_strata;
pub mod cap_sweep;
pub mod configurations;
pub mod contrasts;
pub mod costs;
pub mod decoders;
pub mod discovery;
pub mod first_responses;
pub mod frontier;
pub mod holdout;
pub mod interaction_anatomy;
pub mod lanes;
pub mod pilot;
pub mod repairs;
pub mod repeats;
pub mod sentinel;
pub mod strata;
pub mod switches;
pub mod toolsandbox;
pub mod truncation;
pub mod truncation_strata;
pub mod two_caps;

use arrow_schema::FieldRef;

use crate::rows::{EpisodeRow, RequestRow, VariantRow};
use crate::{ScenarioEpisodeRow, StoreError, TableRow};

/// A table's columns, derived from its row struct.
pub type Layout = fn() -> Result<Vec<FieldRef>, StoreError>;

/// Every published table with a row struct, by name, in the order `docs/tables.md`
/// lists them: the tables of the pipeline's own rows ([`crate::rows`],
/// [`crate::scenarios`]), then the
/// analyses' tables (here). Adding a row struct means adding it here; the
/// documentation test then asks for `docs/tables.md` to be regenerated.
pub const TABLES: &[(&str, Layout)] = &[
    (VariantRow::TABLE, VariantRow::fields),
    (EpisodeRow::TABLE, EpisodeRow::fields),
    (RequestRow::TABLE, RequestRow::fields),
    (ScenarioEpisodeRow::TABLE, ScenarioEpisodeRow::fields),
    (
        crate::scenarios::ScenarioRequestRow::TABLE,
        crate::scenarios::ScenarioRequestRow::fields,
    ),
    (
        contrasts::ContrastsRow::TABLE,
        contrasts::ContrastsRow::fields,
    ),
    (
        contrasts::ContrastsSignFlipRow::TABLE,
        contrasts::ContrastsSignFlipRow::fields,
    ),
    (
        contrasts::ContrastsByConfigurationRow::TABLE,
        contrasts::ContrastsByConfigurationRow::fields,
    ),
    (
        truncation::TruncationRow::TABLE,
        truncation::TruncationRow::fields,
    ),
    (
        truncation::TruncationPairsRow::TABLE,
        truncation::TruncationPairsRow::fields,
    ),
    (
        truncation::TruncationCorrelationRow::TABLE,
        truncation::TruncationCorrelationRow::fields,
    ),
    (strata::StrataRow::TABLE, strata::StrataRow::fields),
    (
        interaction_anatomy::InteractionAnatomyRow::TABLE,
        interaction_anatomy::InteractionAnatomyRow::fields,
    ),
    (lanes::LanesRow::TABLE, lanes::LanesRow::fields),
    (costs::CostsRow::TABLE, costs::CostsRow::fields),
    (
        configurations::ConfigurationsRow::TABLE,
        configurations::ConfigurationsRow::fields,
    ),
    (
        first_responses::FirstResponsesRow::TABLE,
        first_responses::FirstResponsesRow::fields,
    ),
    (
        truncation_strata::TruncationStrataRow::TABLE,
        truncation_strata::TruncationStrataRow::fields,
    ),
    (
        cap_strata::SweepStrataRow::TABLE,
        cap_strata::SweepStrataRow::fields,
    ),
    (
        cap_strata::CrossoverStrataRow::TABLE,
        cap_strata::CrossoverStrataRow::fields,
    ),
    (repairs::RepairsRow::TABLE, repairs::RepairsRow::fields),
    (sentinel::SentinelRow::TABLE, sentinel::SentinelRow::fields),
    (repeats::RepeatsRow::TABLE, repeats::RepeatsRow::fields),
    (holdout::HoldoutRow::TABLE, holdout::HoldoutRow::fields),
    (
        holdout::HoldoutArmsRow::TABLE,
        holdout::HoldoutArmsRow::fields,
    ),
    (decoders::DecodersRow::TABLE, decoders::DecodersRow::fields),
    (
        decoders::DecoderGainsRow::TABLE,
        decoders::DecoderGainsRow::fields,
    ),
    (
        decoders::DecoderPacketsRow::TABLE,
        decoders::DecoderPacketsRow::fields,
    ),
    (
        decoders::DecoderMultiRow::TABLE,
        decoders::DecoderMultiRow::fields,
    ),
    (
        cap_sweep::CapSweepRow::TABLE,
        cap_sweep::CapSweepRow::fields,
    ),
    (
        cap_sweep::CapSweepConfigurationsRow::TABLE,
        cap_sweep::CapSweepConfigurationsRow::fields,
    ),
    (
        cap_crossover::CapCrossoverRow::TABLE,
        cap_crossover::CapCrossoverRow::fields,
    ),
    (
        cap_crossover::CapCrossoverConfigurationsRow::TABLE,
        cap_crossover::CapCrossoverConfigurationsRow::fields,
    ),
    (switches::SwitchesRow::TABLE, switches::SwitchesRow::fields),
    (
        switches::SwitchIncumbentsRow::TABLE,
        switches::SwitchIncumbentsRow::fields,
    ),
    (
        switches::SwitchSummaryRow::TABLE,
        switches::SwitchSummaryRow::fields,
    ),
    (
        discovery::DiscoveryRow::TABLE,
        discovery::DiscoveryRow::fields,
    ),
    (frontier::FrontierRow::TABLE, frontier::FrontierRow::fields),
    (
        frontier::FrontierPathsRow::TABLE,
        frontier::FrontierPathsRow::fields,
    ),
    (pilot::PilotRow::TABLE, pilot::PilotRow::fields),
    (
        pilot::TraceSelectorRow::TABLE,
        pilot::TraceSelectorRow::fields,
    ),
    (
        toolsandbox::ToolsandboxContrastsRow::TABLE,
        toolsandbox::ToolsandboxContrastsRow::fields,
    ),
    (
        toolsandbox::ToolsandboxCategoriesRow::TABLE,
        toolsandbox::ToolsandboxCategoriesRow::fields,
    ),
    (
        toolsandbox::ToolsandboxLevelsRow::TABLE,
        toolsandbox::ToolsandboxLevelsRow::fields,
    ),
];

#[cfg(test)]
mod docs;
