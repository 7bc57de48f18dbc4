//! The engine: manifests ([`manifest`]), the node DAG, its cache and everything that
//! runs it ([`pipeline`]), one episode read back ([`show`]), and the registry of
//! analysis kinds ([`kinds`]). Everything the engine runs lives in the crates below it:
//! the episode loop in `tbb_harness`, the table contract in `tbb_tables`, the analyses
//! in `tbb_analysis`, the report in `tbb_report`.
//!
//! Never: gives an agent or a provider anything but a chat request. The agent crate
//! cannot see the core; the engine must not hand core values across either.
#![warn(missing_docs)]

pub mod kinds;
pub mod manifest;
pub mod pipeline;
pub mod show;
#[cfg(test)]
mod toy;
