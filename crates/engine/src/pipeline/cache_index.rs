//! The cache's index in memory: every committed node's entry, found by its key and
//! the latest one of each identity by its identity.
//!
//! An entry holds a 128-bit digest of its key and of its identity, not the texts
//! (`Digest`): the texts of a cached plan's 36,745 entries were 8 MB, as much as the
//! DAG's own copies of them. The few callers that need an entry's texts (a plan
//! listing orphans, compaction) read them back from its file ([`super::cache::Cache::texts`]).
//!
//! Both lookups are tables of entry numbers (4 bytes a slot) hashed by the entry's
//! digests, not maps from a copy of each string (24 bytes a slot): the index of
//! the capacity study at 4 repeats has 145,000 entries, and its two maps were 13 MB
//! of slots, most of them empty after the table grew past a power of two.
//!
//! Why `hashbrown::HashTable`: it is the table under `std`'s `HashMap`, opened up so
//! that a slot can hold an index into a vector and be hashed and compared through it;
//! no other crate gives that, and writing a probe table by hand is not worth it.
//!
//! Never: reads or writes files (the cache does), or decides which entry is the latest
//! (the one pushed last is).

use hashbrown::HashTable;

use super::key::NodeKind;

/// 128 bits standing for a key or an identity in the index. A key that is blake3 hex
/// (every node key) stands for itself: its first 16 bytes; any other text is hashed
/// with blake3 first. Either way two texts share a digest only by a 128-bit collision
/// of blake3, which nobody can craft (a weaker hash would let a crafted manifest take
/// another node's cached result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest(u128);

impl Digest {
    /// The digest of `text`.
    pub fn of(text: &str) -> Digest {
        let mut bytes = [0u8; 16];
        if text.len() == 64 && decode_hex_prefix(text, &mut bytes) {
            return Digest(u128::from_le_bytes(bytes));
        }
        bytes.copy_from_slice(&blake3::hash(text.as_bytes()).as_bytes()[..16]);
        Digest(u128::from_le_bytes(bytes))
    }

    /// The table hash: the digest's low bits, already uniform.
    fn hash(self) -> u64 {
        // Truncation is the point: the low 64 bits of a uniform 128.
        self.0 as u64
    }
}

/// Decodes the first 32 lower-case hex digits of `text` into `out`; false when
/// `text` is not lower-case hex throughout.
fn decode_hex_prefix(text: &str, out: &mut [u8; 16]) -> bool {
    fn digit(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.iter().all(|&b| digit(b).is_some()) {
        return false;
    }
    for (i, o) in out.iter_mut().enumerate() {
        match (digit(bytes[2 * i]), digit(bytes[2 * i + 1])) {
            (Some(hi), Some(lo)) => *o = hi << 4 | lo,
            _ => return false,
        }
    }
    true
}

/// One committed node.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Kind.
    pub kind: NodeKind,
    /// Its identity's digest.
    pub id: Digest,
    /// Its key's digest.
    pub key: Digest,
    /// The nodes file it is in (the cache's number for it).
    pub(super) file: u32,
    /// Its row in that file.
    pub(super) row: u32,
}

impl Entry {
    /// The entry of a node of `kind` with identity `id` and key `key`, at `row` of
    /// nodes file `file`.
    pub(super) fn new(kind: NodeKind, id: &str, key: &str, file: u32, row: u32) -> Entry {
        Entry {
            kind,
            id: Digest::of(id),
            key: Digest::of(key),
            file,
            row,
        }
    }
}

/// Every committed node's entry, in commit order, with its two lookups.
#[derive(Debug, Default)]
pub struct Index {
    entries: Vec<Entry>,
    by_key: HashTable<u32>,
    latest: HashTable<u32>,
}

/// An entry's key: what `by_key` is hashed on.
fn key_of(entry: &Entry) -> Digest {
    entry.key
}

/// An entry's identity: what `latest` is hashed on.
fn id_of(entry: &Entry) -> Digest {
    entry.id
}

/// Points `table`'s slot for the digest of entry `number` (its key or its identity,
/// as `digest` reads it) at that entry, adding the slot if the digest is new.
fn point(table: &mut HashTable<u32>, entries: &[Entry], number: u32, digest: fn(&Entry) -> Digest) {
    let at = |i: &u32| digest(&entries[*i as usize]);
    let own = digest(&entries[number as usize]);
    match table.find_mut(own.hash(), |i| at(i) == own) {
        Some(slot) => *slot = number,
        None => {
            table.insert_unique(own.hash(), number, |i| at(i).hash());
        }
    }
}

/// The entry whose digest (as `digest` reads it) is `probe`.
fn find<'a>(
    table: &HashTable<u32>,
    entries: &'a [Entry],
    digest: fn(&Entry) -> Digest,
    probe: Digest,
) -> Option<&'a Entry> {
    table
        .find(probe.hash(), |&i| digest(&entries[i as usize]) == probe)
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
            .reserve(more, |&i| key_of(&entries[i as usize]).hash());
        self.latest
            .reserve(more, |&i| id_of(&entries[i as usize]).hash());
    }

    /// The entry of `key`.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        find(&self.by_key, &self.entries, key_of, Digest::of(key))
    }

    /// The latest entry of identity `id`.
    pub fn latest(&self, id: &str) -> Option<&Entry> {
        find(&self.latest, &self.entries, id_of, Digest::of(id))
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

    fn entry(id: &str, key: &str, row: u32) -> (Entry, String, String) {
        (
            Entry::new(NodeKind::Execute, id, key, 0, row),
            id.to_string(),
            key.to_string(),
        )
    }

    /// A key finds its entry (the last pushed of a key pushed twice), an identity its
    /// latest entry, and the latest entries come in commit order; against a slow
    /// reference over many entries, across the tables' growth.
    #[test]
    fn keys_find_their_entry_and_identities_their_latest() {
        let mut index = Index::default();
        let mut reference: Vec<(Entry, String, String)> = Vec::new();
        for n in 0..5_000u32 {
            // Identities repeat every 1,500 entries; keys every 4,000.
            let e = entry(&format!("id{}", n % 1_500), &format!("k{}", n % 4_000), n);
            index.push(e.0.clone());
            reference.push(e);
        }
        assert_eq!(index.len(), 5_000);
        for probe in ["k0", "k123", "k3999", "k4000"] {
            let slow = reference.iter().rev().find(|e| e.2 == probe);
            assert_eq!(
                index.get(probe).map(|e| e.row),
                slow.map(|e| e.0.row),
                "{probe}"
            );
        }
        for probe in ["id0", "id1499", "id1500"] {
            let slow = reference.iter().rev().find(|e| e.1 == probe);
            assert_eq!(
                index.latest(probe).map(|e| e.row),
                slow.map(|e| e.0.row),
                "{probe}"
            );
        }
        let latest: Vec<u32> = index.latest_entries().iter().map(|e| e.row).collect();
        let mut slow: Vec<u32> = (0..1_500)
            .filter_map(|i| {
                let id = format!("id{i}");
                reference.iter().rev().find(|e| e.1 == id).map(|e| e.0.row)
            })
            .collect();
        slow.sort_unstable();
        assert_eq!(latest, slow);
    }
}

#[cfg(test)]
mod digest_tests {
    use super::Digest;

    /// A blake3 hex key stands for its own first 16 bytes; any other text, hex of
    /// another length or with upper-case digits included, is hashed, so the two
    /// spellings of one text never share a digest by construction.
    #[test]
    fn a_hex_key_is_its_own_digest_and_other_texts_are_hashed() {
        let key = blake3::hash(b"x").to_hex().to_string();
        let mut first = [0u8; 16];
        first.copy_from_slice(&blake3::hash(b"x").as_bytes()[..16]);
        assert_eq!(Digest::of(&key), Digest(u128::from_le_bytes(first)));
        let upper = key.to_uppercase();
        let mut hashed = [0u8; 16];
        hashed.copy_from_slice(&blake3::hash(upper.as_bytes()).as_bytes()[..16]);
        assert_eq!(Digest::of(&upper), Digest(u128::from_le_bytes(hashed)));
        assert_ne!(Digest::of("execute[cfg=a]"), Digest::of("execute[cfg=b]"));
        assert_ne!(Digest::of(&key[..63]), Digest::of(&key));
    }
}
