//! The repair studies (paper Section 4.3, Table 10; manifests `repairs`, `sentinel`
//! and `holdout`): their kinds, one file per kind named as the manifest names it
//! (`repairs`, `switches`, `sentinel`, `holdout`; `switches` is also run by `smoke`),
//! and the library only they use, `repair_stats` (L, Γ, Σ, Δ and their bootstrap).
//! The sentinel and holdout kinds read their episodes as `repairs` does.
//!
//! Never: holds a library another study needs (those are in [`crate::common`]).

pub mod holdout;
pub mod repair_stats;
pub mod repairs;
pub mod sentinel;
pub mod switches;
