//! The levels the two completion-cap studies' tables share (`cap_sweep`,
//! `cap_crossover` and their `_configurations` tables, written by the kinds of the
//! analyses' `cap` folder through their `two_caps` library).

use serde::{Deserialize, Serialize};

/// Which of the two completion caps a row speaks of, or their change: the `arm_role`
/// column (a name kept from the paper's tables; an arm of the harness is something
/// else, a prompt × menu × delivery × actor form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapRole {
    /// The lower cap.
    Low,
    /// The higher cap.
    High,
    /// High minus low.
    Change,
}

impl CapRole {
    /// The two caps, low first.
    pub const CAPS: [CapRole; 2] = [CapRole::Low, CapRole::High];

    /// `low`, `high`, `change` (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            CapRole::Low => "low",
            CapRole::High => "high",
            CapRole::Change => "change",
        }
    }
}

/// What a row of a cap study's main table measures: the `statistic` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapStatistic {
    /// The paired within-family menu contrast, V = 128 − V = 8 over the four endpoint
    /// W × D cells (on a change row: its change between the caps), in pp.
    VContrast,
    /// Share of kept V = 128 episodes truncated at the cap, in %.
    TruncatedShareV128,
    /// Share of conditions whose kept repeats disagree on success, in %.
    RepeatDisagreement,
}

impl CapStatistic {
    /// `v_contrast`, `truncated_share_v128`, `repeat_disagreement` (its serde name;
    /// also the last part of a row's bootstrap stream).
    pub fn name(self) -> &'static str {
        match self {
            CapStatistic::VContrast => "v_contrast",
            CapStatistic::TruncatedShareV128 => "truncated_share_v128",
            CapStatistic::RepeatDisagreement => "repeat_disagreement",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name()` feeds bootstrap streams and the tables hold the serde name: they
    /// must be one text.
    #[test]
    fn a_levels_name_is_its_serde_name() {
        for r in [CapRole::Low, CapRole::High, CapRole::Change] {
            assert_eq!(serde_json::to_value(r).ok(), Some(r.name().into()));
        }
        for s in [
            CapStatistic::VContrast,
            CapStatistic::TruncatedShareV128,
            CapStatistic::RepeatDisagreement,
        ] {
            assert_eq!(serde_json::to_value(s).ok(), Some(s.name().into()));
        }
    }
}
