//! `cap_sweep.parquet` and `cap_sweep_configurations.parquet`, written by the
//! `cap_sweep` analysis (the completion-cap sweep, paper Appendix E.1).

use arrow_schema::FieldRef;
use serde::{Deserialize, Serialize};

use super::two_caps::{CapConfiguration, CapEstimate};
use crate::{columns_of, StoreError, TableRow};

/// One row of `cap_sweep`: the estimate's columns (strata in the order B, M, N —
/// menu contrast, truncation, repeat disagreement — then `all`, every configuration in
/// a stratum, for truncation and repeat disagreement only), then the margin's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapSweepRow {
    /// What the row estimates.
    #[serde(flatten)]
    pub estimate: CapEstimate,
    /// The change measured against the pre-specified margin.
    #[serde(flatten)]
    pub margin: Margin,
}

/// The `cap_sweep` columns after the estimate's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Margin {
    /// The pre-specified margin, pp (change rows of the menu contrast only).
    pub margin_pp: Option<f64>,
    /// The change's interval lies wholly above the margin (change rows of the menu
    /// contrast with an interval).
    pub clears_margin: Option<bool>,
    /// The change's interval lies wholly inside (−margin, margin).
    pub within_margin: Option<bool>,
}

impl TableRow for CapSweepRow {
    const TABLE: &'static str = "cap_sweep";

    fn fields() -> Result<Vec<FieldRef>, StoreError> {
        let mut fields = columns_of::<CapEstimate>(Self::TABLE)?;
        fields.extend(columns_of::<Margin>(Self::TABLE)?);
        Ok(fields)
    }
}

/// One row of `cap_sweep_configurations`: one configuration of the episodes × cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CapSweepConfigurationsRow(pub CapConfiguration);

impl TableRow for CapSweepConfigurationsRow {
    const TABLE: &'static str = "cap_sweep_configurations";
}
