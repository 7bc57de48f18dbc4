//! Where the files a study publishes go, relative to `outputs/<study>/`, for the ones
//! named by more than one crate.
//!
//! Never: touches the file system.

/// Hex digits of an episode's key that name its page.
pub const PAGE_PREFIX: usize = 12;

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
