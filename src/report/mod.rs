//! Placeholder: the report module (issue 5) is being written.
