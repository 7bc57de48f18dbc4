//! The capacity study's kinds (paper Sections 4.1–4.2, Appendices C and D; manifests
//! `capacity`, `smoke` and `local`), one file per kind, named as the manifest names
//! it. `costs` is also run by the discovery and repairs studies.
//!
//! Never: holds a library another study needs (those are in [`crate::common`]).

pub mod configurations;
pub mod contrasts;
pub mod costs;
pub mod decoders;
pub mod first_responses;
pub mod interaction_anatomy;
pub mod lanes;
pub mod strata;
pub mod truncation;
