//! [`HexKey`]: a 256-bit content key (a blake3 hash) that a row holds as its 32 bytes
//! and reads and writes as 64 lower-case hex digits.
//!
//! A key held as text is a 24-byte `String` and 64 bytes more on the heap; as its bytes
//! it is 32 bytes and no allocation. The capacity study's episode rows at 4 repeats
//! held 4.6 MB of `episode_key` texts.
//!
//! Why `blake3::Hash` underneath: the keys are blake3 hashes, and the crate already
//! reads and writes their hex (`Hash::from_hex`, `Hash::to_hex`); its equality is
//! constant-time, which costs nothing here.
//!
//! Never: hashes anything (a key is made where its input is: [`crate::episode_key`]),
//! or accepts a text that would not be written back the same (upper-case digits, another
//! length): such a value is refused, naming what was expected.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 256-bit key, written as 64 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HexKey(blake3::Hash);

impl HexKey {
    /// The key `text` spells; `None` unless it is 64 lower-case hex digits.
    pub fn parse(text: &str) -> Option<HexKey> {
        let lower_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
        if text.len() != 64 || !text.as_bytes().iter().all(lower_hex) {
            return None;
        }
        blake3::Hash::from_hex(text).ok().map(HexKey)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// Its 64 hex digits, on the stack: borrow them as `&str` (`&*key.text()`).
    pub fn text(&self) -> impl std::ops::Deref<Target = str> {
        self.0.to_hex()
    }
}

impl From<blake3::Hash> for HexKey {
    fn from(hash: blake3::Hash) -> HexKey {
        HexKey(hash)
    }
}

impl From<[u8; 32]> for HexKey {
    fn from(bytes: [u8; 32]) -> HexKey {
        HexKey(blake3::Hash::from_bytes(bytes))
    }
}

/// Keys order as their texts do: lower-case hex digits sort as the bytes they spell.
impl Ord for HexKey {
    fn cmp(&self, other: &HexKey) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for HexKey {
    fn partial_cmp(&self, other: &HexKey) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for HexKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Display for HexKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl fmt::Debug for HexKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HexKey({self})")
    }
}

impl PartialEq<str> for HexKey {
    fn eq(&self, other: &str) -> bool {
        *self.text() == *other
    }
}

impl PartialEq<String> for HexKey {
    fn eq(&self, other: &String) -> bool {
        *self.text() == **other
    }
}

impl Serialize for HexKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for HexKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HexKey, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = HexKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key of 64 lower-case hex digits")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<HexKey, E> {
                HexKey::parse(text)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(text), &self))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

    #[test]
    fn a_key_reads_and_writes_as_the_same_text() {
        let key = HexKey::parse(KEY).unwrap_or_else(|| panic!("{KEY} is a key"));
        assert_eq!(&*key.text(), KEY);
        assert_eq!(key.to_string(), KEY);
        assert_eq!(key, *KEY);
        let json = serde_json::to_string(&key).unwrap_or_default();
        assert_eq!(json, format!("\"{KEY}\""));
        let back: HexKey = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, key);
        assert_eq!(std::mem::size_of::<HexKey>(), 32);
    }

    #[test]
    fn keys_order_as_their_texts() {
        let texts = [
            KEY.to_string(),
            KEY.replace('0', "a"),
            KEY.replace('f', "1"),
        ];
        let mut keys: Vec<HexKey> = texts.iter().filter_map(|t| HexKey::parse(t)).collect();
        keys.sort();
        let mut sorted = texts.to_vec();
        sorted.sort();
        let back: Vec<String> = keys.iter().map(HexKey::to_string).collect();
        assert_eq!(back, sorted);
    }

    #[test]
    fn only_64_lower_case_hex_digits_are_a_key() {
        assert!(HexKey::parse(&KEY.to_uppercase()).is_none());
        assert!(HexKey::parse(&KEY[..63]).is_none());
        assert!(HexKey::parse(&format!("{KEY}0")).is_none());
        assert!(HexKey::parse(&KEY.replace('f', "g")).is_none());
        let error = serde_json::from_str::<HexKey>("\"k1\"")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("expected a key of 64 lower-case hex digits"),
            "{error}"
        );
    }
}
