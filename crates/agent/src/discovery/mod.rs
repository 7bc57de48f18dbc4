//! Discovery: deciding which tool schemas reach the model before its first request,
//! from what the model would be shown — the rendered user request and the schemas.
//!
//! Owns: the lexical retriever of the retrieval menu ([`retrieve`], scoring with
//! [`bm25`]) and the connector-first router ([`router`]). The harness calls them with
//! the variant's full menu as wire schemas and the user request's text, and shows the
//! model what they keep.
//!
//! These live on the agent side of the crate wall on purpose: a discovery mechanism is
//! a repair or a manipulation of what the model sees, and must be as blind as the
//! model. This crate cannot name a compiled variant, its operational tools, its
//! reference program or the grader, so nothing here can use them.
//!
//! Never: reads anything but its arguments; keeps state between calls.

pub mod bm25;
pub mod retrieve;
pub mod router;
