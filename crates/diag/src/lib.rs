//! The diagnostics every loader shares: byte spans of TOML values ([`spans`]), the
//! bound on a problem report ([`problems`]) and the field names of a schema struct for
//! "did you mean" ([`fields`]).
//!
//! Owns: nothing of the benchmark. Both sides of the wall (the core's family loader and
//! the provider crate's catalogue) depend on this crate, so it must never hold a type
//! that describes a task, an answer or a grade.
#![warn(missing_docs)]

pub mod fields;
pub mod problems;
pub mod spans;
