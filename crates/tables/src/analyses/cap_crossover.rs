//! `cap_crossover.parquet` and `cap_crossover_configurations.parquet`, written by the
//! `cap_crossover` analysis (the completion-cap crossover, paper Appendix E).

use arrow_schema::FieldRef;
use serde::{Deserialize, Serialize};

use super::two_caps::{CapConfiguration, CapEstimate};
use crate::{columns_of, StoreError, TableRow};

/// One row of `cap_crossover`: the estimate's columns (strata in the order B, S, N —
/// menu contrast, truncation, repeat disagreement — then `all`, every configuration
/// in a stratum, for truncation and repeat disagreement only), then its reading's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapCrossoverRow {
    /// What the row estimates.
    #[serde(flatten)]
    pub estimate: CapEstimate,
    /// How to read it when truncation persists at the high cap.
    #[serde(flatten)]
    pub reading: Reading,
}

/// The `cap_crossover` columns after the estimate's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Whether some configuration of the stratum fails the manipulation check; null
    /// on `all` rows.
    pub truncation_persists: Option<bool>,
    /// When truncation persists: a sentence saying the rows measure the menu penalty
    /// while truncation persists at the high cap; null otherwise.
    pub reading: Option<String>,
}

impl TableRow for CapCrossoverRow {
    const TABLE: &'static str = "cap_crossover";

    fn fields() -> Result<Vec<FieldRef>, StoreError> {
        let mut fields = columns_of::<CapEstimate>(Self::TABLE)?;
        fields.extend(columns_of::<Reading>(Self::TABLE)?);
        Ok(fields)
    }
}

/// One row of `cap_crossover_configurations`: one configuration of the episodes ×
/// cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CapCrossoverConfigurationsRow(pub CapConfiguration);

impl TableRow for CapCrossoverConfigurationsRow {
    const TABLE: &'static str = "cap_crossover_configurations";
}
