//! The cache's index in memory: every committed node's entry, found by its key and
//! the latest one of each identity by its identity.
//!
//! Both lookups are tables of entry numbers (4 bytes a slot) hashed by the entry's
//! own strings, not maps from a copy of each string (24 bytes a slot): the index of
//! the capacity study at 4 repeats has 145,000 entries, and its two maps were 13 MB
//! of slots, most of them empty after the table grew past a power of two.
//!
//! Why `hashbrown::HashTable`: it is the table under `std`'s `HashMap`, opened up so
//! that a slot can hold an index into a vector and be hashed and compared through it;
//! no other crate gives that, and writing a probe table by hand is not worth it.
//!
//! Never: reads or writes files (the cache does), or decides which entry is the latest
//! (the one pushed last is).

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::key::NodeKind;

/// One committed node.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Kind.
    pub kind: NodeKind,
    /// Identity.
    pub id: Arc<str>,
    /// Key.
    pub key: Arc<str>,
    /// The nodes file it is in (the cache's number for it).
    pub(super) file: u32,
    /// Its row in that file.
    pub(super) row: u32,
}

/// Every committed node's entry, in commit order, with its two lookups.
#[derive(Debug, Default)]
pub struct Index {
    entries: Vec<Entry>,
    by_key: HashTable<u32>,
    latest: HashTable<u32>,
}

fn hash(text: &str) -> u64 {
    FxBuildHasher.hash_one(text)
}

/// An entry's key: what `by_key` is hashed on.
fn key_of(entry: &Entry) -> &str {
    &entry.key
}

/// An entry's identity: what `latest` is hashed on.
fn id_of(entry: &Entry) -> &str {
    &entry.id
}

/// Points `table`'s slot for the text of entry `number` (its key or its identity, as
/// `text` reads it) at that entry, adding the slot if the text is new.
fn point(table: &mut HashTable<u32>, entries: &[Entry], number: u32, text: fn(&Entry) -> &str) {
    let at = |i: &u32| text(&entries[*i as usize]);
    let own = text(&entries[number as usize]);
    match table.find_mut(hash(own), |i| at(i) == own) {
        Some(slot) => *slot = number,
        None => {
            table.insert_unique(hash(own), number, |i| hash(at(i)));
        }
    }
}

/// The entry whose text (as `text` reads it) is `probe`.
fn find<'a>(
    table: &HashTable<u32>,
    entries: &'a [Entry],
    text: fn(&Entry) -> &str,
    probe: &str,
) -> Option<&'a Entry> {
    table
        .find(hash(probe), |&i| text(&entries[i as usize]) == probe)
        .map(|&i| &entries[i as usize])
}

impl Index {
    /// Adds an entry: the one of its key, and the latest of its identity.
    ///
    /// # Panics
    /// Never for a cache that fits in memory: past 4 billion entries the entry numbers
    /// would not fit their slots.
    pub fn push(&mut self, entry: Entry) {
        let Ok(number) = u32::try_from(self.entries.len()) else {
            unreachable!("more than 4 billion cache entries")
        };
        self.entries.push(entry);
        point(&mut self.by_key, &self.entries, number, key_of);
        point(&mut self.latest, &self.entries, number, id_of);
    }

    /// Room for `more` entries, exactly (each caller knows how many it adds: a file's
    /// rows, an apply's nodes).
    pub fn reserve(&mut self, more: usize) {
        self.entries.reserve_exact(more);
        let entries = &self.entries;
        self.by_key
            .reserve(more, |&i| hash(key_of(&entries[i as usize])));
        self.latest
            .reserve(more, |&i| hash(id_of(&entries[i as usize])));
    }

    /// The entry of `key`.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        find(&self.by_key, &self.entries, key_of, key)
    }

    /// The latest entry of identity `id`.
    pub fn latest(&self, id: &str) -> Option<&Entry> {
        find(&self.latest, &self.entries, id_of, id)
    }

    /// The latest entry of every identity, in commit order.
    pub fn latest_entries(&self) -> Vec<&Entry> {
        let mut live: Vec<u32> = self.latest.iter().copied().collect();
        live.sort_unstable();
        live.into_iter()
            .map(|i| &self.entries[i as usize])
            .collect()
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, key: &str, row: u32) -> Entry {
        Entry {
            kind: NodeKind::Execute,
            id: id.into(),
            key: key.into(),
            file: 0,
            row,
        }
    }

    /// A key finds its entry (the last pushed of a key pushed twice), an identity its
    /// latest entry, and the latest entries come in commit order; against a slow
    /// reference over many entries, across the tables' growth.
    #[test]
    fn keys_find_their_entry_and_identities_their_latest() {
        let mut index = Index::default();
        let mut reference: Vec<Entry> = Vec::new();
        for n in 0..5_000u32 {
            // Identities repeat every 1,500 entries; keys every 4,000.
            let e = entry(&format!("id{}", n % 1_500), &format!("k{}", n % 4_000), n);
            reference.push(e.clone());
            index.push(e);
        }
        assert_eq!(index.len(), 5_000);
        for probe in ["k0", "k123", "k3999", "k4000"] {
            let slow = reference.iter().rev().find(|e| &*e.key == probe);
            assert_eq!(
                index.get(probe).map(|e| e.row),
                slow.map(|e| e.row),
                "{probe}"
            );
        }
        for probe in ["id0", "id1499", "id1500"] {
            let slow = reference.iter().rev().find(|e| &*e.id == probe);
            assert_eq!(
                index.latest(probe).map(|e| e.row),
                slow.map(|e| e.row),
                "{probe}"
            );
        }
        let latest: Vec<u32> = index.latest_entries().iter().map(|e| e.row).collect();
        let mut slow: Vec<u32> = (0..1_500)
            .filter_map(|i| {
                let id = format!("id{i}");
                reference.iter().rev().find(|e| *e.id == *id).map(|e| e.row)
            })
            .collect();
        slow.sort_unstable();
        assert_eq!(latest, slow);
    }
}
