//! The benchmark's core: families, the compiler, the sandbox, the grader and their
//! audits.
//!
//! A task *family* (data in `families/`) is compiled, one pressure at a time, into
//! matched *variants* ([`compile`]): a record store, a visible tool menu, a rendered user
//! request, the reference answer and the reference program with its certified minimum
//! number of calls. The [`sandbox`] executes an agent's tool calls against a variant and
//! returns observations in the variant's record encoding; [`grade`] checks an episode's
//! trace against the nine obligations and assigns the terminal flag; [`audit`] holds the
//! static and runtime checks of all of it.
//!
//! Layering inside the crate (an arrow means "may use"): `audit -> grade -> sandbox ->
//! compile -> family`. `compile` owns the record store's lookups because the
//! certified-minimum search must execute tool semantics without the sandbox's state and
//! encodings.
//!
//! Never: touches the network, the clock or the file system beyond reading family files,
//! and never depends on the agent or provider crates. The agent side cannot depend on
//! this crate either; the engine's harness is the one place where both meet.
#![warn(missing_docs)]

pub mod audit;
pub mod compile;
pub mod family;
pub mod grade;
pub mod sandbox;
