//! The diagnostics every loader shares: byte spans of TOML values ([`spans`]) and the
//! bound on a problem report ([`problems`]).
//!
//! Owns: nothing of the benchmark. Both sides of the wall (the core's family loader and
//! the provider crate's catalogue) depend on this crate, so it must never hold a type
//! that describes a task, an answer or a grade.
#![warn(missing_docs)]

pub mod problems;
pub mod spans;
