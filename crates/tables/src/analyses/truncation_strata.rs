//! `truncation_strata.parquet`, written by the `truncation_strata` analysis: the cap
//! sweep's strata read from another study's `truncation` table, and the level the
//! sweep's strata are named by.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// A configuration's truncation stratum (paper Appendix E.1), by its V = 128
/// truncation share, decided on the integer counts so that a share of exactly 20 % or
/// 5 % falls in the stratum it opens. The names are the paper's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TruncationStratum {
    /// Truncation-heavy: share ≥ 20 %.
    B,
    /// Mild: 5 % ≤ share < 20 %.
    M,
    /// None: no truncated episode.
    N,
}

impl TruncationStratum {
    /// Its name in tables (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            TruncationStratum::B => "B",
            TruncationStratum::M => "M",
            TruncationStratum::N => "N",
        }
    }
}

/// One row of `truncation_strata`: one configuration of this study (sorted by name)
/// and what the upstream table says of it at the stratum read (`lane`,
/// `completion_cap`, `v`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruncationStrataRow {
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// The upstream menu lane read (default routed).
    pub lane: String,
    /// The upstream completion cap read, tokens (default the frozen 1,024).
    pub completion_cap: u32,
    /// The menu size read (always 128).
    pub v: u32,
    /// The upstream row's episodes; null when the upstream table has no row for the
    /// configuration.
    pub upstream_episodes: Option<u32>,
    /// The upstream row's truncated episodes; null as `upstream_episodes`.
    pub upstream_truncated: Option<u32>,
    /// `upstream_truncated / upstream_episodes`; null with no upstream row or no
    /// upstream episode.
    pub truncated_share: Option<f64>,
    /// The stratum; null with no upstream row, or a share above 0 and below 5 %
    /// (outside the sweep's strata).
    pub stratum: Option<TruncationStratum>,
}

impl TableRow for TruncationStrataRow {
    const TABLE: &'static str = "truncation_strata";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stratums_name_is_its_serde_name() {
        for s in [
            TruncationStratum::B,
            TruncationStratum::M,
            TruncationStratum::N,
        ] {
            assert_eq!(serde_json::to_value(s).ok(), Some(s.name().into()));
        }
    }
}
