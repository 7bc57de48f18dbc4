//! [`Name`]: a text value that many rows repeat (a configuration, a family, an arm, a
//! variant), held once and shared by every row that has it.
//!
//! A study's episode rows repeat a dozen names each, and its request rows seven: the
//! capacity study at 4 repeats held 72,576 copies of each in its episode rows alone,
//! and its apply peaked 43 MiB lower once they were shared.
//! Every name made or read goes through one process-wide table of the names seen so
//! far and comes back as a shared handle to the one copy. The table keeps a name for
//! the life of the process (a command reads a bounded set of names: the manifest's,
//! the catalogue's and the variants').
//!
//! Why not a crate: `lasso` hands out keys that need its interner to be read, and
//! `internment` keeps its own global maps per type with more than this needs; a `Mutex`
//! over a set of `Arc<str>` gives handles that read as `&str` on their own, in a few
//! lines.
//!
//! Never: changes what a value is or how it is written (a name serialises as its text:
//! a `Utf8` column, a JSON string).

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashSet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A shared, immutable name: one pointer (`Arc<Box<str>>`, not `Arc<str>`, whose
/// pointer carries the length too). An episode row holds thirteen names, so the
/// capacity study's rows at 4 repeats took 7.5 MB more with two-word handles; reading
/// the text goes through one more pointer.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Name(Arc<Box<str>>);

fn table() -> &'static Mutex<FxHashSet<Name>> {
    static NAMES: OnceLock<Mutex<FxHashSet<Name>>> = OnceLock::new();
    NAMES.get_or_init(|| Mutex::new(FxHashSet::default()))
}

impl Name {
    /// The shared copy of `text`.
    pub fn new(text: &str) -> Name {
        // A poisoned table still holds only whole names.
        let mut names = table().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = names.get(text) {
            return known.clone();
        }
        let name = Name(Arc::new(Box::from(text)));
        names.insert(name.clone());
        name
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name::new(&text)
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Name {
        Name::new(text)
    }
}

impl From<Name> for String {
    fn from(name: Name) -> String {
        name.as_str().to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Name;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Name, E> {
                Ok(Name::new(text))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal texts share one copy, however they were made or read.
    #[test]
    fn equal_names_share_one_copy() {
        let made = Name::new("sim-ember-pro");
        let from_string = Name::from(String::from("sim-ember-pro"));
        let read: Name = serde_json::from_str("\"sim-ember-pro\"").unwrap_or_default();
        assert!(Arc::ptr_eq(&made.0, &from_string.0));
        assert!(Arc::ptr_eq(&made.0, &read.0));
        assert_eq!(made, "sim-ember-pro");
        assert_eq!(
            serde_json::to_string(&made).ok().as_deref(),
            Some("\"sim-ember-pro\"")
        );
        assert_ne!(Name::new("a"), Name::new("b"));
    }
}
