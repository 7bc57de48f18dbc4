//! The diagnostics every loader shares: byte spans of TOML values ([`spans`]), the
//! bound on a problem report ([`problems`]), the text a diagnostic shows of a file
//! ([`source`]), the one bounded read of a user's file ([`input`]) and the one escaping
//! of untrusted text for a terminal ([`terminal`]).
//!
//! Owns: nothing of the benchmark. Both sides of the wall (the core's family loader and
//! the provider crate's catalogue) depend on this crate, so it must never hold a type
//! that describes a task, an answer or a grade.
#![warn(missing_docs)]

pub mod input;
pub mod problems;
pub mod source;
pub mod spans;
pub mod terminal;
