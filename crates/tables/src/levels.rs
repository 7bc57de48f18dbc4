//! The levels a row carries and the harness contract's constants, as the tables and
//! the analyses name them: a family's domain and split, the pressures of a cell (V, W,
//! D, R, depth), the components of an arm (prompt, menu, delivery, actor), the
//! completion cap and the episode budget.
//!
//! The types are the core's and the harness's own (re-exported, never copied), so a
//! level means one thing from the compiler to the report; the analyses reach them
//! only through here, which keeps the analysis crate off the core and the harness.
//!
//! Never: defines a level of its own or renames one (a level's name is its serde name,
//! [`level_name`]).

pub use tbb_core::compile::cell::{
    level_name, Cell, Encoding, Routing, Workflow, FRONTIER_DEPTHS, MENU_SIZES,
};
pub use tbb_core::family::{Domain, Split};
pub use tbb_core::grade::EPISODE_BUDGET;
pub use tbb_harness::{Actor, Arm, ArmForm, Delivery, Menu, PromptVariant, COMPLETION_CAP};
