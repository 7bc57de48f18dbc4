//! See [`crate::analysis`]; filled in by the capacity-analysis work.
