//! The engine: the episode loop ([`harness`], the only place where the core's variant,
//! sandbox and grader meet the agent side's requests and responses), manifests
//! ([`manifest`]), the node DAG and its cache ([`pipeline`]), the tables ([`store`]),
//! the analyses ([`analysis`]), the reports ([`report`]) and one episode read back
//! ([`show`]).
//!
//! Never: gives an agent or a provider anything but a chat request. The agent crate
//! cannot see the core; the engine must not hand core values across either.
#![warn(missing_docs)]

pub mod analysis;
pub mod harness;
pub mod manifest;
pub mod pipeline;
pub mod report;
pub mod show;
pub mod store;
