//! The one rule for names a user gives (studies, configurations, arms, blocks, manifest
//! files) and the one way such a name becomes part of a path.
//!
//! A name is an *identifier*: lowercase ASCII letters, digits, `-`, `_` and `.`,
//! starting with a letter or a digit, at most [`MAX_LEN`] bytes ([`RULE`] says it in
//! words, for errors and docs). The dot is allowed because served models are versioned
//! with one (`openai-gpt-4.1-mini`); a name can still never be `.`, `..`, hidden, empty,
//! or hold a separator, so it is always exactly one new path component.
//!
//! Owns: [`is_identifier`], [`check`], [`path_under`], and the "did you mean" of every
//! unknown name ([`closest`]). Every loader checks names with
//! [`check`] (at the value's span, in its own diagnostic); every place that puts a name
//! into a path calls [`path_under`], which refuses anything [`check`] refuses, so a name
//! that slipped past a loader still cannot leave its directory.
//!
//! Never: reads or writes a file, or repairs a name (a refused name is the user's to fix).

use std::fmt;
use std::path::{Path, PathBuf};

/// The longest identifier, in bytes: well under every file system's component limit,
/// with room for the suffixes tbb adds (`.lock`, `.parquet`).
pub const MAX_LEN: usize = 64;

/// The rule, in the words errors and docs use.
pub const RULE: &str = "lowercase ASCII letters, digits, `-`, `_` and `.`, starting with a letter or a digit, at most 64 characters";

/// A name that is not an identifier, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnIdentifier {
    /// The name as given.
    pub name: String,
    /// What breaks the rule.
    pub why: String,
}

impl fmt::Display for NotAnIdentifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Escaped: a name is user text and may hold control characters.
        write!(
            f,
            "`{}` is not an identifier: {}",
            self.name.escape_debug(),
            self.why
        )
    }
}

impl std::error::Error for NotAnIdentifier {}

/// Whether `name` is an identifier (see the module docs).
pub fn is_identifier(name: &str) -> bool {
    check(name).is_ok()
}

/// Checks `name` against the rule, saying what breaks it.
pub fn check(name: &str) -> Result<(), NotAnIdentifier> {
    let refuse = |why: String| {
        Err(NotAnIdentifier {
            name: name.to_string(),
            why,
        })
    };
    let Some(first) = name.chars().next() else {
        return refuse("it is empty".into());
    };
    if name.len() > MAX_LEN {
        return refuse(format!("it is {} bytes long, over {MAX_LEN}", name.len()));
    }
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return refuse(format!(
            "it starts with `{}`, not a lowercase letter or a digit",
            first.escape_debug()
        ));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c);
    if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        return refuse(format!(
            "`{}` is not a lowercase ASCII letter, a digit, `-`, `_` or `.`",
            c.escape_debug()
        ));
    }
    Ok(())
}

/// `dir/<name><suffix>`, for an identifier `name`; anything else is refused, so the
/// path is always one new component directly under `dir`. `suffix` is tbb's own
/// (`""`, `.lock`, `.parquet`), never user text.
pub fn path_under(dir: &Path, name: &str, suffix: &str) -> Result<PathBuf, NotAnIdentifier> {
    check(name)?;
    Ok(dir.join(format!("{name}{suffix}")))
}

/// The option nearest to `name` by edit distance, if it is near enough to be what the
/// user meant: the "did you mean" of every unknown name.
pub fn closest<'a>(name: &str, options: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    options
        .map(|o| (edit_distance(o, name), o))
        .min()
        .filter(|(d, _)| *d <= name.len().max(3) / 2 + 2)
        .map(|(_, o)| o)
}

/// Levenshtein distance; small inputs only (names).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_lowercase_words_with_digits_dashes_underscores_and_dots() {
        for ok in [
            "capacity",
            "sim-aurora-flash",
            "openai-gpt-4.1-mini",
            "retrieval_k8",
            "0b",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "it is empty"),
            ("..", "it starts with `.`"),
            (".hidden", "it starts with `.`"),
            ("-flag", "it starts with `-`"),
            ("../../../../etc/passwd", "it starts with `.`"),
            ("a/b", "`/` is not"),
            ("a\\b", "`\\\\` is not"),
            ("Capacity", "it starts with `C`"),
            ("café", "`é` is not"),
            ("a b", "` ` is not"),
            ("a\u{1b}]0;x\u{7}", "`\\u{1b}` is not"),
        ] {
            let err = check(bad).err();
            assert!(
                err.as_ref().is_some_and(|e| e.why.contains(why)),
                "{bad:?}: {err:?}"
            );
        }
        assert!(is_identifier(&"a".repeat(MAX_LEN)));
        assert!(!is_identifier(&"a".repeat(MAX_LEN + 1)));
    }

    #[test]
    fn a_path_under_a_directory_is_one_component_of_an_identifier() {
        let dir = Path::new("outputs");
        assert_eq!(
            path_under(dir, "capacity", ""),
            Ok(PathBuf::from("outputs/capacity"))
        );
        assert_eq!(
            path_under(Path::new("lockfiles"), "sweep", ".lock"),
            Ok(PathBuf::from("lockfiles/sweep.lock"))
        );
        for bad in ["", "..", ".", "../../../../etc/passwd", "/etc", "a/../../b"] {
            let refused = path_under(dir, bad, ".lock");
            assert!(refused.is_err(), "{bad:?} gave {refused:?}");
        }
        let shown = path_under(dir, "a\u{1b}[2J", "")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!shown.contains('\u{1b}'), "escaped: {shown:?}");
    }
}
