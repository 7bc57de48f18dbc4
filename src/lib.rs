//! # tbb — ToolBottleneckBench as a tool
//!
//! The `tbb` package is the command line ([`cli`]) over a workspace whose crates draw
//! the benchmark's one hard line:
//!
//! - `tbb-core`: families, compiler, sandbox, grader, audits. Pure and deterministic.
//! - `tbb-agent`: what an agent may use — the chat types, the [`provider::Provider`]
//!   trait, token counting, the simulated panel. It cannot depend on `tbb-core`, so
//!   an agent can never name an answer, a reference program or a grade.
//! - `tbb-provider`: the catalogue, retries and the wire clients, over `tbb-agent` only.
//! - `tbb-engine`: the harness (where core and agent meet), manifests, the pipeline,
//!   the tables, the analyses and the reports.
//! - `tbb-diag`: spans, problem-report bounds, shown sources, bounded reads and terminal
//!   escaping, shared by loaders on both sides.
//!
//! Layering (an arrow means "may use"): `cli -> engine -> {core, provider, agent}`;
//! `provider -> agent`; `agent` and `core` use nothing of ours but `tbb-diag`.
//!
//! The modules are re-exported here under their historical paths (`tbb::compile`,
//! `tbb::harness`, ...), so tests, benchmarks and notebooks name one crate.
#![warn(missing_docs)]

pub mod cli;
pub mod fuzz;

pub use tbb_analysis as analysis;
pub use tbb_core::{audit, compile, family, grade, sandbox};
pub use tbb_diag::{input, limits, names, problems, source, spans, terminal};
pub use tbb_engine::{kinds, manifest, pipeline, show};
pub use tbb_harness as harness;
pub use tbb_provider as provider;
pub use tbb_report as report;
pub use tbb_tables as tables;
