//! A cell: one level of every pressure. Parsing, validation and the canonical text
//! used in keys and names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The visible menu sizes of the paper.
pub const MENU_SIZES: [u16; 3] = [8, 32, 128];
/// The deepest chain: the paper's frontier ends at 30 calls, where its episodes already
/// reach the 128,000-token budget before the call limit.
pub const MAX_DEPTH: u8 = 30;
/// The frontier depths of the paper (required calls along the handoff chain).
pub const FRONTIER_DEPTHS: [u8; 4] = [2, 6, 14, 30];

/// Workflow pressure: how many records the facts are spread over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workflow {
    /// One record.
    Low,
    /// Two records.
    Medium,
    /// Three records.
    High,
}

/// Returned-record encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// Values under `payload`.
    Raw,
    /// A field dictionary plus value rows.
    Compact,
    /// `type`, `fields`, `source`.
    Typed,
    /// Typed plus `links` and a `relation_dictionary`.
    Linked,
}

/// Routing difficulty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Every other connector differs from the route in at least two coordinates.
    Low,
    /// Near-miss connectors (one coordinate off) come first among the distractors.
    High,
}

/// One level of every pressure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Cell {
    /// Visible menu size.
    pub v: u16,
    /// Workflow pressure (ignored for the chain when `depth` is set).
    pub w: Workflow,
    /// Encoding.
    pub d: Encoding,
    /// Routing difficulty.
    pub r: Routing,
    /// Required calls along the handoff chain (frontier), overriding `w`: a search and a
    /// read per record, so depth 30 is a chain of 15 records. A permitted write is not
    /// on the chain and adds one call to the certified minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u8>,
}

/// A cell that cannot be compiled.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CellError {
    /// Menu size outside the paper's levels.
    #[error("menu size V = {0} is not one of 8, 32, 128")]
    MenuSize(u16),
    /// Depth must be an even number of calls from 2 to 30.
    #[error("depth {0} is not an even number of calls between 2 and 30")]
    Depth(u8),
    /// A level string that is not known.
    #[error("`{value}` is not a level of {axis} (expected one of {expected})")]
    Level {
        /// Which axis.
        axis: &'static str,
        /// What was given.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
}

impl Cell {
    /// A cell at routing difficulty low and no frontier depth.
    pub fn new(v: u16, w: Workflow, d: Encoding) -> Cell {
        Cell {
            v,
            w,
            d,
            r: Routing::Low,
            depth: None,
        }
    }

    /// The canonical form: a frontier depth overrides the workflow level, which is then
    /// always `high`, so that one chain has one cell (and one variant id).
    pub fn normalized(&self) -> Cell {
        match self.depth {
            Some(_) => Cell {
                w: Workflow::High,
                ..*self
            },
            None => *self,
        }
    }

    /// Checks the levels.
    pub fn validate(&self) -> Result<(), CellError> {
        if !MENU_SIZES.contains(&self.v) {
            return Err(CellError::MenuSize(self.v));
        }
        if let Some(d) = self.depth {
            if !(2..=MAX_DEPTH).contains(&d) || d % 2 != 0 {
                return Err(CellError::Depth(d));
            }
        }
        Ok(())
    }

    /// A cell at a frontier depth (menu 8, raw, routing low).
    pub fn frontier(depth: u8) -> Cell {
        Cell {
            depth: Some(depth),
            ..Cell::new(8, Workflow::High, Encoding::Raw)
        }
    }

    /// The 12 cells of the capacity factorial: the 8 endpoints
    /// {8,128}×{low,high}×{raw,linked} then the 4 checkpoints.
    pub fn capacity() -> Vec<Cell> {
        let mut cells = Vec::new();
        for v in [8, 128] {
            for w in [Workflow::Low, Workflow::High] {
                for d in [Encoding::Raw, Encoding::Linked] {
                    cells.push(Cell::new(v, w, d));
                }
            }
        }
        cells.push(Cell::new(32, Workflow::Low, Encoding::Raw));
        cells.push(Cell::new(8, Workflow::Medium, Encoding::Raw));
        cells.push(Cell::new(8, Workflow::Low, Encoding::Compact));
        cells.push(Cell::new(8, Workflow::Low, Encoding::Typed));
        cells
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "v={}, w={}, d={}, r={}",
            self.v,
            level_name(&self.w),
            level_name(&self.d),
            level_name(&self.r)
        )?;
        if let Some(depth) = self.depth {
            write!(f, ", depth={depth}")?;
        }
        Ok(())
    }
}

/// The serde name of a level (`low`, `linked`, ...).
pub fn level_name<T: Serialize>(level: &T) -> String {
    serde_json::to_value(level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The name of each level of a factor and the levels in order, written once per
/// factor: `name` is the level's serde name (a test holds them equal), so the tables,
/// the manifests and the report spell a level alike. `name` matches on every listed
/// variant, so a variant missing from the list does not compile, and `ALL` is complete.
/// Exported for the factors other crates define over the core's (the tables' response
/// kind); the enum must derive `Serialize` with those names.
#[macro_export]
macro_rules! level_names {
    ($level:ident { $($variant:ident => $name:literal),* $(,)? }) => {
        impl $level {
            /// Every level, in order.
            pub const ALL: &'static [$level] = &[$($level::$variant),*];

            /// The level's name (its serde name).
            pub fn name(self) -> &'static str {
                match self {
                    $($level::$variant => $name),*
                }
            }
        }

        impl ::std::fmt::Display for $level {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

// The core's other factors (domain, split, terminal flag, obligation, stop reason,
// finish reason, infrastructure cause) take their names the same way.
crate::level_names!(Workflow { Low => "low", Medium => "medium", High => "high" });
crate::level_names!(Encoding { Raw => "raw", Compact => "compact", Typed => "typed", Linked => "linked" });
crate::level_names!(Routing { Low => "low", High => "high" });

fn parse_level<T: for<'de> Deserialize<'de>>(
    s: &str,
    axis: &'static str,
    expected: &'static str,
) -> Result<T, CellError> {
    serde_json::from_value(serde_json::Value::String(s.to_ascii_lowercase())).map_err(|_| {
        CellError::Level {
            axis,
            value: s.to_string(),
            expected,
        }
    })
}

impl FromStr for Workflow {
    type Err = CellError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_level(s, "W", "low, medium, high")
    }
}

impl FromStr for Encoding {
    type Err = CellError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_level(s, "D", "raw, compact, typed, linked")
    }
}

impl FromStr for Routing {
    type Err = CellError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_level(s, "R", "low, high")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_levels_name_is_its_serde_name() {
        for w in Workflow::ALL {
            assert_eq!(w.name(), level_name(w));
            assert_eq!(w.to_string().parse::<Workflow>().ok(), Some(*w));
        }
        for d in Encoding::ALL {
            assert_eq!(d.name(), level_name(d));
            assert_eq!(d.to_string().parse::<Encoding>().ok(), Some(*d));
        }
        for r in Routing::ALL {
            assert_eq!(r.name(), level_name(r));
            assert_eq!(r.to_string().parse::<Routing>().ok(), Some(*r));
        }
    }

    /// Every level of `all` is named by its serde name, once.
    fn names_are_serde_names<T: Serialize + Copy>(all: &[T], name: fn(T) -> &'static str) {
        let names: std::collections::BTreeSet<&str> = all.iter().map(|l| name(*l)).collect();
        assert_eq!(names.len(), all.len());
        for l in all {
            assert_eq!(name(*l), level_name(l));
        }
    }

    #[test]
    fn every_factor_of_the_core_names_its_levels_by_their_serde_names() {
        use crate::family::{Domain, Split};
        use crate::grade::trace::{FinishReason, InfraCause, StopReason};
        use crate::grade::{Obligation, TerminalFlag};
        names_are_serde_names(Domain::ALL, Domain::name);
        names_are_serde_names(Split::ALL, Split::name);
        names_are_serde_names(TerminalFlag::ALL, TerminalFlag::name);
        names_are_serde_names(Obligation::ALL, Obligation::name);
        names_are_serde_names(StopReason::ALL, StopReason::name);
        names_are_serde_names(FinishReason::ALL, FinishReason::name);
        names_are_serde_names(InfraCause::ALL, InfraCause::name);
        // `first_unmet` has always been an obligation's Debug text.
        assert!(Obligation::ALL.iter().all(|o| format!("{o:?}") == o.name()));
    }

    #[test]
    fn capacity_factorial_has_twelve_distinct_cells() {
        let cells = Cell::capacity();
        assert_eq!(cells.len(), 12);
        let set: std::collections::BTreeSet<_> = cells.iter().collect();
        assert_eq!(set.len(), 12);
        assert!(cells.iter().all(|c| c.validate().is_ok()));
    }

    #[test]
    fn impossible_levels_are_rejected() {
        assert_eq!(
            Cell::new(7, Workflow::Low, Encoding::Raw).validate(),
            Err(CellError::MenuSize(7))
        );
        let mut c = Cell::new(8, Workflow::Low, Encoding::Raw);
        c.depth = Some(7);
        assert_eq!(c.validate(), Err(CellError::Depth(7)));
        assert!("huge".parse::<Workflow>().is_err());
        assert_eq!("Linked".parse::<Encoding>(), Ok(Encoding::Linked));
    }
}
