//! The row structs of the tables the analyses publish: one struct per table, named
//! after it, in a file named after the analysis kind that writes it.
//!
//! Owns: each table's columns (name, order, type, nullability, documented meaning).
//! The kind in `tbb_analysis` fills the rows; the report and any analysis that reads
//! the table deserialise the same struct ([`crate::TableRow`]), so a renamed or retyped
//! column is a compile error rather than a report that fails to render.
//!
//! Never: computes a value (the analyses do) or formats one (the report does).

pub mod costs;
pub mod discovery;
pub mod frontier;
pub mod pilot;

use arrow_schema::FieldRef;

use crate::{StoreError, TableRow};

/// A table's columns, derived from its row struct.
pub type Layout = fn() -> Result<Vec<FieldRef>, StoreError>;

/// Every table with a row struct here, by name, in the order `docs/tables.md` lists
/// them. Adding a row struct means adding it here; the documentation test then asks
/// for `docs/tables.md` to be regenerated.
pub const TABLES: &[(&str, Layout)] = &[
    (costs::CostsRow::TABLE, costs::CostsRow::fields),
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
];

#[cfg(test)]
mod docs;
