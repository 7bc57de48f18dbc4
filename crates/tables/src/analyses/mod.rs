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
