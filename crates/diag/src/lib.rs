//! The diagnostics every loader shares: byte spans of TOML values ([`spans`]), the
//! bound on a problem report ([`problems`]), the field names of a schema struct for
//! "did you mean" ([`fields`]), the valid range of every limit ([`limits`]), the rule
//! for names with the one way a name becomes a path ([`names`]), the text a diagnostic
//! shows of a file ([`source`]), the one bounded read of a user's file ([`input`]) and
//! the one escaping of untrusted text for a terminal ([`terminal`]).
//!
//! Owns: nothing of the benchmark. Both sides of the wall (the core's family loader and
//! the provider crate's catalogue) depend on this crate, and so do the manifest and the
//! command line, so it must never hold a type that describes a task, an answer or a
//! grade.
#![warn(missing_docs)]

pub mod fields;
pub mod input;
pub mod limits;
pub mod names;
pub mod problems;
pub mod source;
pub mod spans;
pub mod terminal;
