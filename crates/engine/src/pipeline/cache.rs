//! The node cache under `outputs/<study>/cache/`: every committed node's identity, key,
//! key input and result, in batched Parquet files.
//!
//! Layout: `nodes-<seq>-<id>.parquet` (kind, id, key, key_input, payload),
//! `objects-<seq>-<id>.parquet` (hash, json: configurations and other large key inputs),
//! `blobs-<seq>-<id>.parquet` (ref, text: the system prompts and tool menus transcripts
//! refer to), `requests-<seq>-<id>.parquet` (key, layout, record: the requests of an
//! episode as
//! apply read them, by its execute node's key, so that no later apply reads its
//! transcript again for them) and `tables/<key>/<table>.parquet` (the tables of an
//! analysis node, as Parquet, read back as record batches). A batch is committed by
//! writing its blobs, objects and request records first and its nodes last, each file
//! to a temporary name, fsynced, then renamed; an analysis node's tables are written
//! the same way before the batch that lists it: a node is committed exactly when the
//! file that lists it exists, and everything it refers to exists before it.
//! A process killed at any point leaves only complete files and ignorable `*.tmp`
//! files.
//!
//! Names and order: `<seq>` is a Lamport clock, one above the highest of every file
//! the writer has listed (its own and, for a shared cache, every other writer's it has
//! pulled); `<id>` is a digest of the file's rows, so that writers never collide on a
//! name and need no counter in common ([`super::remote`]). Caches made before shared
//! caches have `<table>-<seq>.parquet` names, read as an empty id. Files are read in
//! `(seq, id)` order and later files win: a file written after its writer saw another
//! comes after it, as in a one-process cache; files written concurrently by different
//! writers are ordered by their ids. Where two writers committed one identity or one
//! key, the entry that wins is so a function of the files alone — never of the order a
//! store lists them in, of which machine merged them, or of a random number. For one
//! key the entries are equal by construction (its key is a digest of everything that
//! makes its result, and every node but a live episode is deterministic; two live runs
//! of one episode differ, and the one in the later file is read by everyone). Within
//! the cache the *latest* entry of an identity is the one a plan compares with, which
//! changes only the reasons it prints: a node whose key any entry has is cached.
//! [`Cache::compact`] rewrites the live entries into one file per table and then
//! deletes the files it replaced (a crash in between leaves duplicates, which reading
//! collapses); a shared cache is never compacted (its store only ever gains files).
//!
//! Damage: every file is opened only if it is a regular file (a named pipe under a cache
//! file's name would block `plan` forever; it is a damaged entry instead). Each file
//! tbb writes here records in its Parquet footer the length and blake3 digest of the
//! bytes before its footer ([`tbb_tables::BODY_DIGEST`]); the blobs and objects files,
//! which every plan reads, are read whole and checked against it, so one cut short or
//! with bytes changed is reported as damaged, naming the file, instead of reading as
//! complete. Files written before the digest existed have none and are read unchecked
//! (no format version changes: old caches stay valid). The nodes files are not hashed
//! at every plan (their payloads are most of the cache, and a plan reads three small
//! columns of them); Parquet's own footer catches one cut short. The deep check of
//! everything stored is `tbb certify` (every episode replayed and re-graded from its
//! transcript and blobs) and `tbb reproduce` (every table recomputed).
//!
//! Storage: the files are kept by a [`Backend`] (a local directory), which this module
//! reads and writes through and never around; a shared cache ([`Cache::open_shared`])
//! is that directory kept in step with a [`Remote`] store: every file it commits is
//! pushed as it is written, in the commit protocol's order.
//!
//! Never: decides what is stale (the plan does) or interprets payloads (apply does).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_array::{Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use serde_json::Value;
use thiserror::Error;

use super::backend::{parse_name, Backend, Listed};
pub use super::cache_index::Entry;
use super::cache_index::Index;
use super::key::{KeyInput, NodeKind};
use super::remote::{Remote, RemoteError};
use tbb_tables::StoreError;

/// An entry's identity and key as text, read back from its nodes file
/// ([`Cache::texts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryTexts {
    /// Identity.
    pub id: String,
    /// Key.
    pub key: String,
}

/// What [`Cache::for_each_row`] hands each wanted row to: its tag, the batch's columns
/// and the row's place in them.
type RowVisitor<'a, T> = dyn FnMut(T, &[&StringArray], usize) -> Result<(), CacheError> + 'a;

/// The cache cannot be read or written.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum CacheError {
    /// File system.
    #[error("cache {}: {source}", path.display())]
    #[diagnostic(code(tbb::cache::io))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A cache file is not what tbb writes.
    #[error("cache file {} is damaged: {detail}", path.display())]
    #[diagnostic(
        code(tbb::cache::damaged),
        help("delete the file (its nodes will rerun), or the whole cache directory")
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Writing a batch failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] StoreError),
    /// The shared store failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Remote(#[from] RemoteError),
}

/// A node to commit.
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// Kind.
    pub kind: NodeKind,
    /// Identity (shared with the DAG's node, so that the cache's index of what an
    /// apply commits holds no copy of it).
    pub id: Arc<str>,
    /// Key (shared likewise).
    pub key: Arc<str>,
    /// Canonical JSON of its key input.
    pub input: String,
    /// Its result (JSON).
    pub payload: String,
}

/// What one commit writes.
#[derive(Debug, Default)]
pub struct Batch {
    /// Nodes.
    pub nodes: Vec<NewEntry>,
    /// Objects `(hash, json)` not yet in the cache.
    pub objects: Vec<(String, String)>,
    /// Blobs `(ref, text)` not yet in the cache.
    pub blobs: Vec<(String, String)>,
    /// Stored request records `(execute key, layout, record)` of the episodes among
    /// `nodes` ([`Cache::stored_requests`]).
    pub requests: Vec<(String, String, String)>,
}

impl Batch {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
            && self.objects.is_empty()
            && self.blobs.is_empty()
            && self.requests.is_empty()
    }
}

/// The cache of one study.
#[derive(Debug)]
pub struct Cache {
    backend: Backend,
    files: Vec<PathBuf>,
    index: Index,
    /// The `key_input` column of each nodes file, read the first time an entry of that
    /// file is diffed: a plan with everything cached reads none of them.
    key_inputs: Vec<OnceLock<Vec<String>>>,
    objects: HashMap<String, String>,
    blob_refs: HashSet<String>,
    next_seq: u64,
    /// The shared store this directory is kept in step with, if any.
    remote: Option<Arc<Remote>>,
    /// Whether what this cache commits is sent to `remote` ([`SyncMode::PullAndPush`]).
    pushing: bool,
}

/// How a shared cache's directory is brought in step with its store when opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Fetch what the store has and this directory lacks (every command that reads).
    Pull,
    /// Also send what this directory has and the store lacks (a command that
    /// commits: its commits are pushed as they are written).
    PullAndPush,
}

/// What opening a shared cache copied.
#[derive(Debug, Clone, Default)]
pub struct Synced {
    /// Files fetched from the store.
    pub pulled: usize,
    /// Files sent to the store.
    pub pushed: usize,
}

const NODES: &str = "nodes";
/// The subdirectory of analysis tables.
const TABLES: &str = "tables";
const OBJECTS: &str = "objects";
const BLOBS: &str = "blobs";
/// The request records of episodes, by execute key ([`Cache::stored_requests`]).
const REQUESTS: &str = "requests";
/// The columns of a requests file, in order.
const REQUEST_COLUMNS: [&str; 3] = ["key", "layout", "record"];

impl Cache {
    /// Opens (reads the index of) the cache in `dir`; a missing directory is an empty
    /// cache. Reads every column but the payloads.
    pub fn open(dir: &Path) -> Result<Cache, CacheError> {
        let mut cache = Cache {
            backend: Backend::Local(dir.to_path_buf()),
            files: Vec::new(),
            index: Index::default(),
            key_inputs: Vec::new(),
            objects: HashMap::new(),
            blob_refs: HashSet::new(),
            next_seq: 1,
            remote: None,
            pushing: false,
        };
        if !cache.backend.exists() {
            return Ok(cache);
        }
        let listing = cache.backend.list()?;
        cache.next_seq = listing.iter().map(|l| l.seq + 1).max().unwrap_or(1);
        for Listed { table, path, .. } in listing {
            match table.as_str() {
                NODES => cache.index_nodes(&path)?,
                OBJECTS => {
                    let bytes = cache.read_checked(&path)?;
                    for row in read_strings_of(&path, bytes, &["hash", "json"])? {
                        cache.objects.insert(row[0].clone(), row[1].clone());
                    }
                }
                BLOBS => {
                    let bytes = cache.read_checked(&path)?;
                    for row in read_strings_of(&path, bytes, &["ref"])? {
                        cache.blob_refs.insert(row[0].clone());
                    }
                }
                _ => {}
            }
        }
        Ok(cache)
    }

    /// Opens the cache in `dir` kept in step with `remote`: first fetches the store's
    /// files this directory lacks; with [`SyncMode::PullAndPush`] also sends the store
    /// the files it lacks, and then every file this cache commits. Legacy names
    /// (`<table>-<seq>.parquet`) are given their digest before they are sent, so that
    /// two machines' legacy files never meet under one name.
    pub fn open_shared(
        dir: &Path,
        remote: Remote,
        sync: SyncMode,
    ) -> Result<(Cache, Synced), CacheError> {
        let mut synced = Synced::default();
        let in_store: Vec<String> = ordered(remote.names().into_iter().collect());
        synced.pulled = remote.pull(dir, &in_store)?.len();
        if sync == SyncMode::PullAndPush {
            let backend = Backend::Local(dir.to_path_buf());
            if backend.exists() {
                name_legacy_files(&backend)?;
            }
            let known = remote.names();
            let here: Vec<String> = ordered(local_names(&backend)?)
                .into_iter()
                .filter(|n| !known.contains(n))
                .collect();
            for name in &here {
                remote.push(name, &dir.join(name))?;
            }
            synced.pushed = here.len();
        }
        let mut cache = Cache::open(dir)?;
        cache.remote = Some(Arc::new(remote));
        cache.pushing = sync == SyncMode::PullAndPush;
        Ok((cache, synced))
    }

    /// The shared store this cache is kept in step with, if any.
    pub fn shared(&self) -> Option<&Remote> {
        self.remote.as_deref()
    }

    /// The shared store this cache is kept in step with, as a handle that outlives a
    /// [`Cache::refresh`] (claims and leases are taken on it).
    pub fn shared_store(&self) -> Option<Arc<Remote>> {
        self.remote.clone()
    }

    /// Takes in what other writers have committed to the shared store since this cache
    /// was opened or last refreshed: lists the store again, copies the files this
    /// directory lacks, and when there were any reads the index again whole, so that
    /// which of two entries wins stays a function of the file names alone. Returns how
    /// many files came in (0 for a cache that is not shared).
    pub fn refresh(&mut self) -> Result<usize, CacheError> {
        let Some(remote) = self.remote.clone() else {
            return Ok(0);
        };
        remote.check()?;
        let in_store: Vec<String> = ordered(remote.names().into_iter().collect());
        let pulled = remote.pull(self.backend.root(), &in_store)?.len();
        if pulled > 0 {
            let mut fresh = Cache::open(self.backend.root())?;
            fresh.remote = Some(remote);
            fresh.pushing = self.pushing;
            *self = fresh;
        }
        Ok(pulled)
    }

    /// Of the given keys that are committed, how many are in a file the shared store
    /// holds and how many only in a file here (not yet pushed): what is cached where.
    /// Everything is "here" in a cache that is not shared.
    pub fn where_cached(&self, keys: &[&str]) -> (usize, usize) {
        let names = self.remote.as_ref().map(|r| r.names()).unwrap_or_default();
        let mut in_store = 0;
        let mut here = 0;
        for key in keys {
            let Some(entry) = self.get(key) else {
                continue;
            };
            let name = self.files[entry.file as usize]
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if names.contains(&name) {
                in_store += 1;
            } else {
                here += 1;
            }
        }
        (in_store, here)
    }

    fn index_nodes(&mut self, path: &Path) -> Result<(), CacheError> {
        let file = file_number(self.files.len());
        self.files.push(path.to_path_buf());
        self.key_inputs.push(OnceLock::new());
        let mut row = 0u32;
        let file_handle = self.backend.open(path)?;
        let (rows, reader) = batches_of(path, file_handle, &["kind", "id", "key"])?;
        // Room for the file's rows at once: reserved a batch at a time, the entries
        // grew by doubling past a file boundary to up to twice the index.
        self.index.reserve(rows);
        for batch in reader {
            let batch = batch.map_err(|e| damaged(path, &e.to_string()))?;
            let columns = string_columns(path, &batch, &["kind", "id", "key"])?;
            for r in 0..batch.num_rows() {
                let kind = NodeKind::parse(columns[0].value(r))
                    .ok_or_else(|| damaged(path, "unknown node kind"))?;
                self.index.push(Entry::new(
                    kind,
                    columns[1].value(r),
                    columns[2].value(r),
                    file,
                    row,
                ));
                row += 1;
            }
        }
        Ok(())
    }

    /// The key input an entry was committed with (`None` when it does not parse as
    /// one: written by another version).
    pub fn key_input(&self, entry: &Entry) -> Result<Option<KeyInput>, CacheError> {
        let column = &self.key_inputs[entry.file as usize];
        let texts = match column.get() {
            Some(texts) => texts,
            None => {
                let path = &self.files[entry.file as usize];
                let texts = read_strings_of(path, self.backend.open(path)?, &["key_input"])?
                    .into_iter()
                    .map(|mut row| row.pop().unwrap_or_default())
                    .collect();
                column.get_or_init(|| texts)
            }
        };
        let text = texts
            .get(entry.row as usize)
            .ok_or_else(|| damaged(&self.files[entry.file as usize], "key_input row missing"))?;
        Ok(serde_json::from_str(text).ok())
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        self.backend.root()
    }

    /// Whether any node is committed.
    pub fn has_nodes(&self) -> bool {
        !self.index.is_empty()
    }

    /// The committed node with this key.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.index.get(key)
    }

    /// The latest committed node with this identity.
    pub fn latest(&self, id: &str) -> Option<&Entry> {
        self.index.latest(id)
    }

    /// The latest entry of every identity, in commit order.
    pub fn latest_entries(&self) -> Vec<&Entry> {
        self.index.latest_entries()
    }

    /// The identity and key texts of `entries`, in their order, read from their files
    /// (the index holds only their digests).
    pub fn texts(&self, entries: &[&Entry]) -> Result<Vec<EntryTexts>, CacheError> {
        let mut out = vec![EntryTexts::default(); entries.len()];
        let wanted = entries.iter().enumerate().map(|(at, &e)| (e, at));
        self.for_each_row(wanted, &["id", "key"], &mut |at, columns, row| {
            out[at] = EntryTexts {
                id: columns[0].value(row).to_string(),
                key: columns[1].value(row).to_string(),
            };
            Ok(())
        })?;
        Ok(out)
    }

    /// A cached object's JSON.
    pub fn object(&self, hash: &str) -> Option<Value> {
        self.objects
            .get(hash)
            .and_then(|j| serde_json::from_str(j).ok())
    }

    /// Whether an object is cached.
    pub fn has_object(&self, hash: &str) -> bool {
        self.objects.contains_key(hash)
    }

    /// Whether a blob is cached.
    pub fn has_blob(&self, r: &str) -> bool {
        self.blob_refs.contains(r)
    }

    /// The payloads of the given keys (those committed), read from their files.
    pub fn payloads(&self, keys: &[&str]) -> Result<HashMap<String, String>, CacheError> {
        let mut out = HashMap::new();
        self.for_each_payload(keys, &mut |key, payload| {
            out.insert(key.to_string(), payload.to_string());
            Ok(())
        })?;
        Ok(out)
    }

    /// Hands `each` the payload of each given key (those committed) as it is read, file
    /// by file, holding none of them: for a caller that needs each payload only once
    /// (a plan checks that every stored row still reads).
    pub fn for_each_payload(
        &self,
        keys: &[&str],
        each: &mut dyn FnMut(&str, &str) -> Result<(), CacheError>,
    ) -> Result<(), CacheError> {
        let wanted = keys
            .iter()
            .filter_map(|&k| self.index.get(k).map(|e| (e, k)));
        self.for_each_row(wanted, &["payload"], &mut |key, columns, row| {
            each(key, columns[0].value(row))
        })
    }

    /// Hands `each` the values of `columns` at the row of every entry of `wanted`
    /// (with its tag), file by file and batch by batch, keeping only the wanted rows.
    fn for_each_row<'e, T: Copy + Ord>(
        &self,
        wanted: impl Iterator<Item = (&'e Entry, T)>,
        columns: &[&str],
        each: &mut RowVisitor<'_, T>,
    ) -> Result<(), CacheError> {
        let mut by_file: HashMap<usize, Vec<(usize, T)>> = HashMap::new();
        for (e, tag) in wanted {
            by_file
                .entry(e.file as usize)
                .or_default()
                .push((e.row as usize, tag));
        }
        for (file, mut rows) in by_file {
            rows.sort_unstable();
            let path = &self.files[file];
            let mut next = 0;
            let mut offset = 0;
            for_each_batch_of(path, self.backend.open(path)?, columns, &mut |batch| {
                let values = string_columns(path, batch, columns)?;
                while next < rows.len() && rows[next].0 < offset + batch.num_rows() {
                    let (row, tag) = rows[next];
                    each(tag, &values, row - offset)?;
                    next += 1;
                }
                offset += batch.num_rows();
                Ok(())
            })?;
            if next < rows.len() {
                return Err(damaged(path, "node row missing"));
            }
        }
        Ok(())
    }

    /// Every cached blob's text, by reference.
    pub fn blobs(&self) -> Result<HashMap<String, String>, CacheError> {
        let mut out = HashMap::new();
        for Listed { table, path, .. } in self.backend.list()? {
            if table == BLOBS {
                for row in read_strings_of(&path, self.read_checked(&path)?, &["ref", "text"])? {
                    let [r, text] =
                        <[String; 2]>::try_from(row).map_err(|_| damaged(&path, "short row"))?;
                    out.insert(r, text);
                }
            }
        }
        Ok(out)
    }

    /// Every stored request record as `(execute key, layout, record)`, oldest first (a
    /// later record of a key replaces an earlier one), streamed file by file: apply
    /// commits an episode's record in the batch of its execute and grade nodes, in a
    /// file written before theirs. What a record holds is the caller's business.
    pub fn stored_requests(
        &self,
        each: &mut dyn FnMut(&str, &str, &str) -> Result<(), CacheError>,
    ) -> Result<(), CacheError> {
        for Listed { table, path, .. } in self.backend.list()? {
            if table != REQUESTS {
                continue;
            }
            let file = self.backend.open(&path)?;
            for_each_batch_of(&path, file, &REQUEST_COLUMNS, &mut |batch| {
                let columns = string_columns(&path, batch, &REQUEST_COLUMNS)?;
                for r in 0..batch.num_rows() {
                    each(
                        columns[0].value(r),
                        columns[1].value(r),
                        columns[2].value(r),
                    )?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Commits a batch: blobs, then objects, then request records, then nodes, each file
    /// atomically.
    pub fn commit(&mut self, batch: Batch) -> Result<(), CacheError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.backend.make_dir(self.backend.root())?;
        if !batch.blobs.is_empty() {
            let (refs, texts): (Vec<&str>, Vec<&str>) = batch
                .blobs
                .iter()
                .map(|(r, t)| (r.as_str(), t.as_str()))
                .unzip();
            self.write(BLOBS, &[("ref", &refs), ("text", &texts)])?;
            self.blob_refs
                .extend(batch.blobs.iter().map(|(r, _)| r.clone()));
        }
        if !batch.objects.is_empty() {
            let (hashes, jsons): (Vec<&str>, Vec<&str>) = batch
                .objects
                .iter()
                .map(|(h, j)| (h.as_str(), j.as_str()))
                .unzip();
            self.write(OBJECTS, &[("hash", &hashes), ("json", &jsons)])?;
            self.objects.extend(batch.objects.iter().cloned());
        }
        if !batch.requests.is_empty() {
            let col = |f: fn(&(String, String, String)) -> &str| {
                batch.requests.iter().map(f).collect::<Vec<&str>>()
            };
            self.write(
                REQUESTS,
                &[
                    (REQUEST_COLUMNS[0], &col(|r| &r.0)),
                    (REQUEST_COLUMNS[1], &col(|r| &r.1)),
                    (REQUEST_COLUMNS[2], &col(|r| &r.2)),
                ],
            )?;
        }
        if !batch.nodes.is_empty() {
            let col = |f: fn(&NewEntry) -> &str| batch.nodes.iter().map(f).collect::<Vec<&str>>();
            let kinds = col(|n| n.kind.name());
            let path = self.write(
                NODES,
                &[
                    ("kind", &kinds),
                    ("id", &col(|n| &*n.id)),
                    ("key", &col(|n| &*n.key)),
                    ("key_input", &col(|n| &n.input)),
                    ("payload", &col(|n| &n.payload)),
                ],
            )?;
            let file = file_number(self.files.len());
            self.files.push(path);
            // Read back only if one of them is diffed: kept here, every key input an
            // apply commits would stay in memory to its end.
            self.key_inputs.push(OnceLock::new());
            for (row, n) in (0u32..).zip(batch.nodes) {
                self.index
                    .push(Entry::new(n.kind, &n.id, &n.key, file, row));
            }
        }
        Ok(())
    }

    /// Room in the index for `nodes` more committed nodes, taken before an apply
    /// commits them: grown by doubling as batches arrive, the entries and both lookups
    /// of a large study briefly held their old and new tables at once.
    pub fn reserve(&mut self, nodes: usize) {
        self.index.reserve(nodes);
    }

    /// The next file of `table`, `id` the digest of what it will hold.
    fn next_path(&mut self, table: &str, id: &str) -> PathBuf {
        let path = self
            .dir()
            .join(format!("{table}-{:08}-{id}.parquet", self.next_seq));
        self.next_seq += 1;
        path
    }

    fn write(&mut self, table: &str, columns: &[(&str, &[&str])]) -> Result<PathBuf, CacheError> {
        let path = self.next_path(table, &rows_digest(table, columns));
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, _)| Field::new(*name, DataType::Utf8, false))
            .collect();
        let arrays = columns
            .iter()
            .map(|(_, values)| Arc::new(StringArray::from(values.to_vec())) as Arc<dyn Array>)
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|e| {
            StoreError::Arrow {
                table: table.to_string(),
                source: e,
            }
        })?;
        self.backend.put_cache_table(&path, &batch)?;
        self.push(&path)?;
        Ok(path)
    }

    /// Sends a file just written here to the shared store, if there is one.
    fn push(&self, path: &Path) -> Result<(), CacheError> {
        let Some(remote) = self.remote.as_ref().filter(|_| self.pushing) else {
            return Ok(());
        };
        let name = path
            .strip_prefix(self.dir())
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        Ok(remote.push(&name, path)?)
    }

    /// Writes the tables of analysis node `key` (each atomically) — before the node is
    /// committed, so that a committed analysis always has its tables.
    pub fn put_tables(
        &self,
        key: &str,
        tables: &[(String, RecordBatch)],
    ) -> Result<(), CacheError> {
        let dir = self.dir().join(TABLES).join(key);
        self.backend.make_dir(&dir)?;
        for (name, batch) in tables {
            let path = dir.join(format!("{name}.parquet"));
            self.backend.put_table(&path, batch)?;
            self.push(&path)?;
        }
        Ok(())
    }

    /// A table of analysis node `key`, as one record batch.
    pub fn table(&self, key: &str, name: &str) -> Result<RecordBatch, CacheError> {
        let path = self
            .dir()
            .join(TABLES)
            .join(key)
            .join(format!("{name}.parquet"));
        let file = self.backend.open(&path)?;
        let parquet = |e: parquet::errors::ParquetError| damaged(&path, &e.to_string());
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet)?;
        let schema = builder.schema().clone();
        // One batch for the whole table, however many rows it has.
        let mut reader = builder
            .with_batch_size(usize::MAX >> 1)
            .build()
            .map_err(parquet)?;
        match reader.next() {
            Some(batch) => batch.map_err(|e| damaged(&path, &e.to_string())),
            None => Ok(RecordBatch::new_empty(schema)),
        }
    }

    /// Number of node files (a measure of fragmentation).
    pub fn node_files(&self) -> usize {
        self.files.len()
    }

    /// Rewrites the cache as one file per table — and one nodes file per node kind, so
    /// that reading the payloads of one kind (the few table nodes a plan checks, say)
    /// never decodes another's — holding only the latest entry of each identity; then
    /// deletes the files it replaced.
    pub fn compact(&mut self) -> Result<(), CacheError> {
        // A shared store only ever gains files: compacting this copy would fetch the
        // files it replaced back at the next pull.
        if self.remote.is_some() {
            return Ok(());
        }
        let old = self.backend.list()?;
        let live_entries = self.latest_entries();
        let live: Vec<(NodeKind, EntryTexts)> = live_entries
            .iter()
            .map(|e| e.kind)
            .zip(self.texts(&live_entries)?)
            .collect();
        let mut fresh = Cache::empty_like(self);
        let mut blob_list: Vec<(String, String)> = self.blobs()?.into_iter().collect();
        blob_list.sort();
        let mut object_list: Vec<(String, String)> = self
            .objects
            .iter()
            .map(|(h, j)| (h.clone(), j.clone()))
            .collect();
        object_list.sort();
        fresh.commit(Batch {
            nodes: Vec::new(),
            objects: object_list,
            blobs: blob_list,
            requests: Vec::new(),
        })?;
        // The latest request record of each live execute node, newest files first.
        let request_files: Vec<&PathBuf> = old
            .iter()
            .rev()
            .filter(|l| l.table == REQUESTS)
            .map(|l| &l.path)
            .collect();
        let mut executed: HashSet<&str> = live
            .iter()
            .filter(|(kind, _)| *kind == NodeKind::Execute)
            .map(|(_, e)| e.key.as_str())
            .collect();
        if !request_files.is_empty() && !executed.is_empty() {
            let path = fresh.next_path(REQUESTS, &keys_digest(&executed));
            self.copy_latest(&request_files, &REQUEST_COLUMNS, 0, &mut executed, &path)?;
        }
        // Newest files first, so that of two copies of a key the latest is kept.
        let node_files: Vec<&PathBuf> = old
            .iter()
            .rev()
            .filter(|l| l.table == NODES)
            .map(|l| &l.path)
            .collect();
        for kind in NodeKind::ALL {
            let mut wanted: HashSet<&str> = live
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, e)| e.key.as_str())
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let path = fresh.next_path(NODES, &keys_digest(&wanted));
            self.copy_latest(&node_files, &NODE_COLUMNS, 2, &mut wanted, &path)?;
            fresh.index_nodes(&path)?;
        }
        for listed in old {
            self.backend.remove(&listed.path)?;
        }
        // Tables of analysis nodes no live entry has.
        for path in self.backend.subdirectories(&self.dir().join(TABLES)) {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if fresh.index.get(&name).is_none() {
                self.backend.remove_dir(&path)?;
            }
        }
        *self = fresh;
        Ok(())
    }

    /// Writes into a new file at `path` the rows of `files` (newest first) whose text
    /// column `key` is in `wanted`, the first row of each key only (the newest), taking
    /// each key out of `wanted` as it is copied.
    fn copy_latest(
        &self,
        files: &[&PathBuf],
        columns: &[&str],
        key: usize,
        wanted: &mut HashSet<&str>,
        path: &Path,
    ) -> Result<(), CacheError> {
        let schema = text_schema(columns);
        let mut writer = self.backend.cache_table_writer(path, schema.clone())?;
        for &file in files {
            for_each_batch_of(file, self.backend.open(file)?, columns, &mut |batch| {
                let texts = string_columns(file, batch, columns)?;
                let rows: Vec<usize> = (0..batch.num_rows())
                    .filter(|&r| wanted.remove(texts[key].value(r)))
                    .collect();
                if rows.is_empty() {
                    return Ok(());
                }
                let arrays: Vec<Arc<dyn Array>> = texts
                    .iter()
                    .map(|c| {
                        Arc::new(StringArray::from_iter_values(
                            rows.iter().map(|&r| c.value(r)),
                        )) as Arc<dyn Array>
                    })
                    .collect();
                let selected = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| {
                    StoreError::Arrow {
                        table: file.display().to_string(),
                        source: e,
                    }
                })?;
                writer.write(&selected)?;
                Ok(())
            })?;
        }
        writer.finish()?;
        Ok(())
    }

    fn empty_like(other: &Cache) -> Cache {
        Cache {
            backend: other.backend.clone(),
            files: Vec::new(),
            index: Index::default(),
            key_inputs: Vec::new(),
            objects: HashMap::new(),
            blob_refs: HashSet::new(),
            next_seq: other.next_seq,
            remote: other.remote.clone(),
            pushing: other.pushing,
        }
    }

    /// Deletes temporary files a killed run left behind (call under the outputs lock).
    pub fn remove_temporaries(&self) -> Result<(), CacheError> {
        self.backend.remove_temporaries()
    }

    /// A blobs or objects file, read whole and checked against the digest of its bytes
    /// that its footer records ([`tbb_tables::check_body_digest`]): a file cut short,
    /// or with bytes changed anywhere before its footer, is damaged. A file written
    /// before the digest was (no digest in its footer) is read unchecked.
    fn read_checked(&self, path: &Path) -> Result<bytes::Bytes, CacheError> {
        let bytes = self.backend.read(path)?;
        tbb_tables::check_body_digest(&bytes).map_err(|detail| damaged(path, &detail))?;
        Ok(bytes)
    }
}

/// A file's id from its rows: 16 hex digits of a blake3 digest of the table and every
/// value, each length-prefixed (so that no two different sets of rows share one).
fn rows_digest(table: &str, columns: &[(&str, &[&str])]) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut put = |text: &str| {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    };
    put(table);
    for (name, values) in columns {
        put(name);
        for value in *values {
            put(value);
        }
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// A compacted file's id: a digest of the keys it keeps.
fn keys_digest(keys: &HashSet<&str>) -> String {
    let mut sorted: Vec<&str> = keys.iter().copied().collect();
    sorted.sort_unstable();
    rows_digest("compacted", &[("key", &sorted)])
}

/// Every file of a cache directory a store holds, by name relative to it: the cache
/// files and the analysis tables (`tables/<key>/<table>.parquet`).
fn local_names(backend: &Backend) -> Result<Vec<String>, CacheError> {
    if !backend.exists() {
        return Ok(Vec::new());
    }
    let mut names: Vec<String> = backend
        .list()?
        .into_iter()
        .filter_map(|l| l.path.file_name().map(|n| n.to_string_lossy().to_string()))
        .collect();
    for dir in backend.subdirectories(&backend.root().join(TABLES)) {
        let Some(key) = dir.file_name().map(|n| n.to_string_lossy().to_string()) else {
            continue;
        };
        for table in backend.files_in(&dir) {
            if let Some(file) = table.file_name().and_then(|n| n.to_str()) {
                if file.ends_with(".parquet") {
                    names.push(format!("{TABLES}/{key}/{file}"));
                }
            }
        }
    }
    Ok(names)
}

/// Names in the commit protocol's order: analysis tables, then blobs, objects,
/// requests and nodes, each table's files by `(seq, id)`; names of no cache file
/// dropped.
fn ordered(names: Vec<String>) -> Vec<String> {
    let rank = |name: &str| -> Option<(u8, u64, String)> {
        if let Some(rest) = name.strip_prefix("tables/") {
            let mut parts = rest.split('/');
            let (key, file) = (parts.next()?, parts.next()?);
            let sane = parts.next().is_none()
                && !key.is_empty()
                && !key.starts_with('.')
                && file.ends_with(".parquet");
            return sane.then(|| (0, 0, name.to_string()));
        }
        let (table, seq, id) = parse_name(name)?;
        let rank = match table {
            BLOBS => 1,
            OBJECTS => 2,
            REQUESTS => 3,
            NODES => 4,
            _ => return None,
        };
        Some((rank, seq, id.to_string()))
    };
    let mut ranked: Vec<((u8, u64, String), String)> = names
        .into_iter()
        .filter_map(|n| rank(&n).map(|r| (r, n)))
        .collect();
    ranked.sort();
    ranked.into_iter().map(|(_, n)| n).collect()
}

/// Gives every legacy-named file (`<table>-<seq>.parquet`) of the directory an id, the
/// digest of its bytes, before it is shared.
fn name_legacy_files(backend: &Backend) -> Result<(), CacheError> {
    for listed in backend.list()? {
        if !listed.id.is_empty() {
            continue;
        }
        let bytes = backend.read(&listed.path)?;
        let id = &blake3::hash(&bytes).to_hex()[..16];
        let named = listed
            .path
            .with_file_name(format!("{}-{:08}-{id}.parquet", listed.table, listed.seq));
        std::fs::rename(&listed.path, &named).map_err(|source| CacheError::Io {
            path: listed.path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The columns of a nodes file, in order.
const NODE_COLUMNS: [&str; 5] = ["kind", "id", "key", "key_input", "payload"];

/// The schema of a cache file of text columns.
fn text_schema(columns: &[&str]) -> arrow_schema::SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    ))
}

/// The named text columns of a batch.
fn string_columns<'b>(
    path: &Path,
    batch: &'b RecordBatch,
    columns: &[&str],
) -> Result<Vec<&'b StringArray>, CacheError> {
    columns
        .iter()
        .map(|c| {
            batch
                .column_by_name(c)
                .and_then(|a| a.as_any().downcast_ref::<StringArray>())
                .ok_or_else(|| damaged(path, &format!("no text column `{c}`")))
        })
        .collect()
}

/// The number of the next nodes file: an entry holds it in 4 bytes.
fn file_number(files: usize) -> u32 {
    u32::try_from(files).unwrap_or(u32::MAX)
}

fn damaged(path: &Path, detail: &str) -> CacheError {
    CacheError::Damaged {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

/// The `(ref, text)` rows of a blobs file's bytes, read as [`Cache::blobs`] reads a
/// file: rows, or the error that says the file is damaged, whatever the bytes (the fuzz
/// targets' entry to the cache's reading).
pub fn blob_rows(bytes: Vec<u8>) -> Result<Vec<(String, String)>, CacheError> {
    let path = Path::new("blobs.parquet");
    let bytes = bytes::Bytes::from(bytes);
    tbb_tables::check_body_digest(&bytes).map_err(|detail| damaged(path, &detail))?;
    let mut rows = Vec::new();
    for_each_batch_of(path, bytes, &["ref", "text"], &mut |batch| {
        let columns = string_columns(path, batch, &["ref", "text"])?;
        rows.extend((0..batch.num_rows()).map(|r| {
            (
                columns[0].value(r).to_string(),
                columns[1].value(r).to_string(),
            )
        }));
        Ok(())
    })?;
    Ok(rows)
}

/// Reads the named string columns of a cache file (open or read whole), row by row.
fn read_strings_of<R: parquet::file::reader::ChunkReader + 'static>(
    path: &Path,
    file: R,
    columns: &[&str],
) -> Result<Vec<Vec<String>>, CacheError> {
    let mut batches = Vec::new();
    for_each_batch_of(path, file, columns, &mut |b| {
        batches.push(b.clone());
        Ok(())
    })?;
    let mut rows = Vec::new();
    for batch in &batches {
        let arrays: Vec<&StringArray> = columns
            .iter()
            .map(|c| {
                batch
                    .column_by_name(c)
                    .and_then(|a| a.as_any().downcast_ref::<StringArray>())
                    .ok_or_else(|| damaged(path, &format!("no text column `{c}`")))
            })
            .collect::<Result<_, _>>()?;
        for i in 0..batch.num_rows() {
            rows.push(arrays.iter().map(|a| a.value(i).to_string()).collect());
        }
    }
    Ok(rows)
}

/// Rows per batch read back from a cache file: an execute node's payload is its
/// transcript (~13 KB at V = 128), so the reader's default of 1,024 rows held ~13 MB per
/// column copy while the cache was compacted.
const READ_BATCH_ROWS: usize = 256;

/// Streams a cache file's columns batch by batch (so that a large file is never held
/// whole), from the file open or its bytes; `path` names it.
fn for_each_batch_of<R: parquet::file::reader::ChunkReader + 'static>(
    path: &Path,
    file: R,
    columns: &[&str],
    each: &mut dyn FnMut(&RecordBatch) -> Result<(), CacheError>,
) -> Result<(), CacheError> {
    let (_, reader) = batches_of(path, file, columns)?;
    for batch in reader {
        each(&batch.map_err(|e| damaged(path, &e.to_string()))?)?;
    }
    Ok(())
}

/// The rows of a Parquet file (from its footer) and a reader of `columns` of it,
/// [`READ_BATCH_ROWS`] rows at a time.
fn batches_of<R: parquet::file::reader::ChunkReader + 'static>(
    path: &Path,
    file: R,
    columns: &[&str],
) -> Result<
    (
        usize,
        parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    ),
    CacheError,
> {
    let parquet = |e: parquet::errors::ParquetError| damaged(path, &e.to_string());
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet)?;
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let schema = builder.parquet_schema();
    let indices: Vec<usize> = columns
        .iter()
        .map(|c| {
            (0..schema.num_columns())
                .find(|&i| schema.column(i).name() == *c)
                .ok_or_else(|| damaged(path, &format!("no column `{c}`")))
        })
        .collect::<Result<_, _>>()?;
    let mask = ProjectionMask::leaves(schema, indices);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(READ_BATCH_ROWS)
        .build()
        .map_err(parquet)?;
    Ok((rows, reader))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key text of the latest entry of identity `id`, read back from its file.
    fn latest_key(cache: &Cache, id: &str) -> Option<String> {
        let entry = cache.latest(id)?;
        let texts = cache.texts(&[entry]).unwrap_or_else(|e| panic!("{e}"));
        texts.into_iter().next().map(|t| t.key)
    }

    fn entry(id: &str, key: &str, payload: &str) -> NewEntry {
        NewEntry {
            kind: NodeKind::Execute,
            id: id.into(),
            key: key.into(),
            input: "{}".into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn committed_nodes_read_back_and_the_latest_identity_wins() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut cache = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let batch = |nodes| Batch {
            nodes,
            objects: vec![("h".into(), "{\"a\":1}".into())],
            blobs: vec![("b".into(), "text".into())],
            requests: Vec::new(),
        };
        cache
            .commit(batch(vec![entry("x", "k1", "p1"), entry("y", "k2", "p2")]))
            .unwrap_or_else(|e| panic!("{e}"));
        cache
            .commit(batch(vec![entry("x", "k3", "p3")]))
            .unwrap_or_else(|e| panic!("{e}"));
        for compacted in [false, true] {
            let back = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(latest_key(&back, "x").as_deref(), Some("k3"));
            // Compaction keeps only the latest entry of each identity.
            assert_eq!(back.get("k1").is_some(), !compacted);
            assert!(back.has_blob("b") && back.has_object("h"));
            let p = back
                .payloads(&["k2", "k3", "nope"])
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.get("k2").map(String::as_str), Some("p2"));
            assert_eq!(p.get("k3").map(String::as_str), Some("p3"));
            assert_eq!(p.len(), 2);
            cache.compact().unwrap_or_else(|e| panic!("{e}"));
        }
        let back = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            back.get("k1").is_none(),
            "compaction drops superseded entries"
        );
        assert_eq!(back.node_files(), 1, "one nodes file per kind present");
        assert_eq!(
            back.blobs()
                .unwrap_or_default()
                .get("b")
                .map(String::as_str),
            Some("text")
        );
    }

    #[test]
    fn two_writers_opened_together_keep_each_other_s_files() {
        // Two shards open the same cache, so both number their first file alike.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut one = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let mut two = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        for (cache, id) in [(&mut one, "x"), (&mut two, "y")] {
            let nodes = vec![entry(id, &format!("k{id}"), id)];
            cache
                .commit(Batch {
                    nodes,
                    ..Batch::default()
                })
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let back = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(back.get("kx").is_some() && back.get("ky").is_some());
        assert_eq!(back.node_files(), 2);
    }

    #[test]
    fn analysis_tables_are_parquet_read_back_as_batches_and_pruned_with_their_node() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut cache = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let batch = tbb_tables::TableBuilder::new()
            .text("configuration", ["a", "b"])
            .f64_opt("share", [Some(0.5), None])
            .build("t")
            .unwrap_or_else(|e| panic!("{e}"));
        let empty = tbb_tables::TableBuilder::new()
            .text("configuration", Vec::<String>::new())
            .build("e")
            .unwrap_or_else(|e| panic!("{e}"));
        for key in ["k1", "k2"] {
            cache
                .put_tables(
                    key,
                    &[("t".into(), batch.clone()), ("e".into(), empty.clone())],
                )
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(dir.path().join("tables/k1/t.parquet").is_file());
        assert_eq!(cache.table("k1", "t").ok(), Some(batch.clone()));
        assert_eq!(cache.table("k1", "e").map(|b| b.num_rows()).ok(), Some(0));
        assert!(cache.table("k1", "nope").is_err());
        // Only k2's node is committed: compaction drops k1's tables.
        let mut node = entry("analysis[x]", "k2", "{}");
        node.kind = NodeKind::Analysis;
        cache
            .commit(Batch {
                nodes: vec![node],
                ..Batch::default()
            })
            .unwrap_or_else(|e| panic!("{e}"));
        cache.compact().unwrap_or_else(|e| panic!("{e}"));
        assert!(!dir.path().join("tables/k1").exists());
        assert_eq!(cache.table("k2", "t").ok(), Some(batch));
    }

    /// A remote over one in-memory store, listed.
    fn shared(store: &Arc<object_store::memory::InMemory>) -> Remote {
        let remote = Remote::with_store(
            store.clone(),
            &object_store::path::Path::from("team"),
            "smoke",
            "memory://",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        remote.check().unwrap_or_else(|e| panic!("{e}"));
        remote
    }

    #[test]
    fn a_refresh_takes_in_what_another_writer_committed_since_the_cache_was_opened() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let (a, b) = (
            tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
            tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        );
        let open = |dir: &tempfile::TempDir| {
            Cache::open_shared(dir.path(), shared(&store), SyncMode::PullAndPush)
                .unwrap_or_else(|e| panic!("{e}"))
                .0
        };
        let (mut first, mut second) = (open(&a), open(&b));
        assert_eq!(second.refresh().ok(), Some(0), "nothing new yet");
        first
            .commit(Batch {
                nodes: vec![entry("x", "kx", "from a")],
                ..Batch::default()
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(second.get("kx").is_none());
        assert_eq!(second.refresh().ok(), Some(1));
        let p = second.payloads(&["kx"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.get("kx").map(String::as_str), Some("from a"));
        // It keeps pushing what it commits, after what it took in.
        second
            .commit(Batch {
                nodes: vec![entry("y", "ky", "from b")],
                ..Batch::default()
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.refresh().ok(), Some(1));
        assert!(first.get("ky").is_some());
        // A cache that is not shared has nothing to take in.
        let mut local = Cache::open(a.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(local.refresh().ok(), Some(0));
    }

    #[test]
    fn writers_sharing_a_store_never_collide_and_every_reader_takes_the_same_entry() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let dirs: Vec<tempfile::TempDir> = (0..3)
            .map(|_| tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")))
            .collect();
        // Two writers that have seen nothing of each other commit at the same seq:
        // one identity under different keys, and one key both ran.
        let mut writers: Vec<Cache> = dirs[..2]
            .iter()
            .map(|dir| {
                Cache::open_shared(dir.path(), shared(&store), SyncMode::PullAndPush)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .0
            })
            .collect();
        for (cache, key) in writers.iter_mut().zip(["ka", "kb"]) {
            cache
                .commit(Batch {
                    nodes: vec![entry("x", key, key), entry("y", "k", "same")],
                    blobs: vec![("b".into(), "text".into())],
                    ..Batch::default()
                })
                .unwrap_or_else(|e| panic!("{e}"));
        }
        drop(writers);
        let names = shared(&store).names();
        let nodes: Vec<&String> = names.iter().filter(|n| n.starts_with("nodes-")).collect();
        assert_eq!(nodes.len(), 2, "both writers' files are kept: {names:?}");
        // Identical blobs files of the two writers are one name, one file.
        assert_eq!(names.iter().filter(|n| n.starts_with("blobs-")).count(), 1);
        // Each writer's own copy (its file first, the other's pulled) and a third
        // machine's (both pulled) read the same winner.
        let mut winners = Vec::new();
        for dir in &dirs {
            let (cache, _) = Cache::open_shared(dir.path(), shared(&store), SyncMode::Pull)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(cache.node_files(), 2);
            winners.push(latest_key(&cache, "x"));
            let p = cache.payloads(&["k"]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.get("k").map(String::as_str), Some("same"));
            let (in_store, here) = cache.where_cached(&["ka", "kb", "k", "nope"]);
            assert_eq!((in_store, here), (3, 0));
        }
        assert!(winners[0].is_some());
        assert!(winners.iter().all(|w| w == &winners[0]), "{winners:?}");
        // A shared cache is never compacted: the store would hand the files back.
        let (mut cache, _) =
            Cache::open_shared(dirs[2].path(), shared(&store), SyncMode::PullAndPush)
                .unwrap_or_else(|e| panic!("{e}"));
        cache.compact().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            Cache::open(dirs[2].path()).map(|c| c.node_files()).ok(),
            Some(2)
        );
    }

    #[test]
    fn a_legacy_cache_is_named_by_digest_before_it_is_shared_and_stays_readable() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut cache = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        cache
            .commit(Batch {
                nodes: vec![entry("x", "k1", "p1")],
                ..Batch::default()
            })
            .unwrap_or_else(|e| panic!("{e}"));
        // As a cache made before shared caches names its files.
        let ours = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("nodes-"))
            .unwrap_or_else(|| panic!("no nodes file"));
        std::fs::rename(&ours, dir.path().join("nodes-00000001.parquet"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (cache, synced) = Cache::open_shared(dir.path(), shared(&store), SyncMode::PullAndPush)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(synced.pushed, 1);
        assert_eq!(latest_key(&cache, "x").as_deref(), Some("k1"));
        let names = shared(&store).names();
        assert!(
            names
                .iter()
                .all(|n| parse_name(n).is_some_and(|(_, _, id)| id.len() == 16)),
            "{names:?}"
        );
    }

    #[test]
    fn temporary_files_of_a_killed_run_are_ignored() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("nodes-00000009.parquet.tmp"), b"partial")
            .unwrap_or_else(|e| panic!("{e}"));
        let cache = Cache::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(cache.latest_entries().is_empty());
        cache.remove_temporaries().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read_dir(dir.path())
                .map(|d| d.count())
                .unwrap_or(9),
            0
        );
    }
}
