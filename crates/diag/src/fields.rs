//! The field names of a serde struct, read from its `Deserialize` impl: the "did you
//! mean" of an unknown key in any loader (the manifest's tables, an analysis's
//! parameters) comes from the struct that would have held it, so the list can never
//! drift from the schema.
//!
//! Never: deserialises anything; the probe stops at the first call.

use serde::de::{self, Visitor};
use serde::forward_to_deserialize_any;

/// The field names serde hands to `deserialize_struct` for `T`; empty for anything that
/// is not a plain struct (a map, a struct with a flattened field, an enum).
pub fn field_names<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe(Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &mut Probe {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("probe"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("probe"))
        }
        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut probe = Probe(None);
    let _ = T::deserialize(&mut probe);
    probe.0.unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Budgets {
        episode_budget: u64,
        #[serde(rename = "slack")]
        call_slack: u32,
    }

    #[test]
    fn names_are_the_serialized_ones_and_maps_have_none() {
        assert_eq!(field_names::<Budgets>(), ["episode_budget", "slack"]);
        assert!(field_names::<std::collections::BTreeMap<String, u32>>().is_empty());
    }
}
