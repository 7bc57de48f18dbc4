//! The column types of upstream's tables and the default measure of every column.
//!
//! Owns two facts the evaluator needs and the world does not keep: what polars type each
//! column has upstream (it decides how `fill_null(strategy="zero")` treats a null) and which
//! measure compares a column when a constraint does not say. Never reads a row.

use crate::context::Namespace;

use super::model::ColumnMeasure;

/// A column's polars type upstream, as far as the evaluator's behaviour depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Int32` or `Float64`: a null becomes 0 under the zero fill.
    Number,
    /// `Boolean`: a null becomes false under the zero fill.
    Bool,
    /// `String`: a null becomes the empty string under the zero fill.
    Text,
    /// The `Enum` of roles (`sender`, `recipient`): a null becomes its first category,
    /// `SYSTEM`.
    Role,
    /// A list (`tool_trace`, `visible_to`): polars refuses the zero fill; no constraint
    /// that fills reads SANDBOX, so a null is left as it is.
    List,
}

/// The type of `column` in `ns` (`Text` for a column the namespace does not have).
pub(crate) fn kind(ns: Namespace, column: &str) -> Kind {
    match (ns, column) {
        (_, crate::context::INDEX) => Kind::Number,
        (Namespace::Sandbox, "conversation_active") => Kind::Bool,
        (Namespace::Setting, "cellular" | "wifi" | "location_service" | "low_battery_mode") => {
            Kind::Bool
        }
        (Namespace::Setting | Namespace::Reminder, "latitude" | "longitude") => Kind::Number,
        (Namespace::Contact, "is_self") => Kind::Bool,
        (Namespace::Messaging, "creation_timestamp") => Kind::Number,
        (Namespace::Reminder, "creation_timestamp" | "reminder_timestamp") => Kind::Number,
        (Namespace::Sandbox, "sender" | "recipient") => Kind::Role,
        (Namespace::Sandbox, "tool_trace" | "visible_to") => Kind::List,
        _ => Kind::Text,
    }
}

/// The measure upstream uses for `column` of `ns` unless a constraint overrides it.
pub(crate) fn default_measure(ns: Namespace, column: &str) -> ColumnMeasure {
    match (ns, column) {
        (Namespace::Sandbox, "content")
        | (Namespace::Contact, "relationship")
        | (Namespace::Messaging | Namespace::Reminder, "content") => ColumnMeasure::RougeL,
        (
            Namespace::Sandbox,
            "openai_tool_call_id" | "openai_function_name" | "tool_call_exception",
        ) => ColumnMeasure::One,
        (Namespace::Sandbox, "tool_trace") => ColumnMeasure::ToolTraceExactMatch { atol: None },
        _ => ColumnMeasure::ExactMatch,
    }
}
