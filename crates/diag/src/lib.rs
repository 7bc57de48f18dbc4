//! The diagnostics every loader shares: byte spans of TOML values ([`spans`]), the
//! bound on a problem report ([`problems`]), the field names of a schema struct for
//! "did you mean" ([`fields`]), the valid range of every limit ([`limits`]) and the
//! rule for names, with the one way a name becomes a path ([`names`]).
//!
//! Owns: nothing of the benchmark. Both sides of the wall (the core's family loader and
//! the provider crate's catalogue) depend on this crate, and so do the manifest and the
//! command line, so it must never hold a type that describes a task, an answer or a
//! grade.
#![warn(missing_docs)]

pub mod fields;
pub mod limits;
pub mod names;
pub mod problems;
pub mod spans;
