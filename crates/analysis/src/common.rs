//! The libraries several studies share; none of them is a kind. `design` holds the
//! capacity design (cells, contrasts, paired units) every study's rows are read
//! through, `needs` the view of the manifest a kind checks its needs on, and `stats`
//! every formula and random draw.
//!
//! Never: implements [`crate::Typed`] (a kind lives in its study's folder).

pub mod design;
pub mod needs;
pub mod stats;
