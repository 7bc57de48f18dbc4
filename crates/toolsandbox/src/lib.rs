//! ToolSandbox (apple/ToolSandbox, commit 165848b) as a second benchmark kind beside
//! tbb's own families: its scenarios, the world its tools change, the offline tools, and
//! its milestone evaluator.
//!
//! Upstream's Python is read as the specification; this Rust is ours. The world is
//! upstream's execution context: one table per namespace holding every snapshot the
//! episode made, each tagged with the sandbox message that caused it ([`context`]), so
//! an episode's saved state is enough to grade it again without running a tool. The
//! scenarios and tool schemas are upstream's, vendored and pinned ([`data`],
//! [`scenario`]); the tools ([`tools`]) run on the world with a frozen [`clock`], and
//! [`record`] writes the conversation rows upstream's roles write; [`evaluation`] grades
//! a saved world as upstream's milestone evaluator does.
//!
//! Never: touches the network, the clock or the file system (tools that read the time
//! take it from the frozen clock, and the data is handed in by the caller or compiled
//! in), and never depends on the agent or provider crates: like `tbb-core`, it is on the
//! core's side of the wall.
#![warn(missing_docs)]

pub mod calendar;
pub mod clock;
pub mod context;
pub mod data;
pub mod evaluation;
pub mod fuzzy;
pub mod geo;
pub mod phone;
pub mod py;
pub mod record;
pub mod scenario;
pub mod tools;
pub mod units;
