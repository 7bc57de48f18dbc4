//! # tbb — ToolBottleneckBench as a tool
//!
//! A task *family* (data in `families/`) is compiled, one pressure at a time, into
//! matched *variants* (`compile`): a record store, a visible tool menu, a rendered user
//! request, the reference answer and the reference program with its certified minimum
//! number of calls. The `sandbox` executes an agent's tool calls against a variant and
//! returns observations in the variant's record encoding; the `grade` module checks an
//! episode's trace against the nine obligations and assigns the terminal flag.
//!
//! Module map and layering (an arrow means "may use"):
//! `cli -> {grade, sandbox, compile, family}`; `grade -> {sandbox, compile, family}`;
//! `sandbox -> {compile, family}`; `compile -> family`. The pure core (family after
//! loading, compile, sandbox, grade) never touches the network, the clock or the file
//! system. `compile` owns the record store's lookups because the certified-minimum
//! search must execute tool semantics without depending on the sandbox's state and
//! encodings.
#![warn(missing_docs)]

pub mod analysis;
pub mod audit;
pub mod cli;
pub mod compile;
pub mod family;
pub mod grade;
pub mod harness;
pub mod manifest;
pub mod pipeline;
pub mod problems;
pub mod provider;
pub mod report;
pub mod sandbox;
pub mod spans;
pub mod store;
