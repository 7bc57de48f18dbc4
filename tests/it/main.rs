//! The integration tests, one test binary with a module per subject (ripgrep's and
//! cargo's shape): they drive the library's public API, the real `tbb` binary and
//! loopback servers, and CI compiles and links them once instead of once per file.
//!
//! Every module's tests share this process and run on its test threads side by side
//! (under `cargo test`; nextest gives each test its own process). So a test must never
//! change process-wide state another test can see — environment variables, the current
//! directory, signal dispositions — and a `tbb` child gets its settings through its own
//! `Command`, never through this process's environment. A test that needs such state
//! runs in a child process of this binary (`manifest` has one).
//!
//! The root `Cargo.toml` names this binary and turns off the discovery of
//! `tests/*.rs`; [`one_binary`] fails if a test file lands outside it.

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod certify;
mod claims;
mod cli;
mod common;
mod controller;
mod discovery;
mod fuzz_smoke;
mod harness;
mod hostile;
mod infra;
mod local;
mod manifest;
mod models;
mod one_binary;
mod panel;
mod pipeline;
mod properties;
mod providers;
mod refusals;
mod remote_cache;
mod repairs;
mod requests;
mod shard;
mod show;
mod sim;
mod sim_mechanisms;
mod standalone;
mod toolsandbox;
mod upstream;
mod wall;
