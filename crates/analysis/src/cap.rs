//! The completion-cap studies (paper Appendix E; manifests `sweep` and `crossover`):
//! their kinds, one file per kind named as the manifest names it (`sweep_strata`,
//! `crossover_strata`, `truncation_strata`, `cap_sweep`, `cap_crossover`), and the two
//! libraries only they use: `strata_rule` (how the strata kinds select
//! configurations) and `two_caps` (what `cap_sweep` and `cap_crossover` share).
//!
//! Never: holds a library another study needs (those are in [`crate::common`]).

pub mod cap_crossover;
pub mod cap_sweep;
pub mod crossover_strata;
pub mod strata_rule;
pub mod sweep_strata;
pub mod truncation_strata;
pub mod two_caps;
