//! Where the files a study publishes go, relative to `outputs/<study>/`, for the ones
//! named by more than one crate.
//!
//! Never: touches the file system.

/// Hex digits of an episode's key that name its page.
pub const PAGE_PREFIX: usize = 12;

/// The folder of the episode pages `tbb apply` publishes with the report.
pub const PUBLISHED_PAGES: &str = "episodes";

/// The folder of the episode pages `tbb show --html` writes on request (without a
/// path), one or every selected (`--all`); the index of every episode links the keys
/// without a published page there.
pub const SHOWN_PAGES: &str = "show";

/// The file name of an episode's page: `<first 12 digits of its key>.html`, published
/// under `episodes/` beside the report.
pub fn episode_page(key: &str) -> String {
    format!("{}.html", &key[..PAGE_PREFIX.min(key.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_named_by_the_first_twelve_digits_of_its_key() {
        assert_eq!(episode_page("0123456789abcdef"), "0123456789ab.html");
        assert_eq!(episode_page("abc"), "abc.html");
    }
}
