//! Where a cache's files are kept: the seam of a remote cache.
//!
//! The cache ([`super::cache`]) owns its format and its commit protocol (blobs, then
//! objects, then the nodes that refer to them; later files win). A backend owns only
//! storing immutable files: listing them, reading one, writing one so that it exists
//! whole or not at all, deleting one. The one backend is a local directory
//! ([`Backend::Local`]: temporary file, fsync, rename); a cache shared through object
//! storage keeps this directory as its working copy and [`super::remote`] copies files
//! between it and the store.
//!
//! Names: `<table>-<seq>-<id>.parquet`, `<id>` a digest of the file's rows (unique per
//! writer without coordination), or `<table>-<seq>.parquet` as caches made before
//! shared caches name them. A listing is ordered by `(seq, id)`, a legacy file's id
//! being empty: an order of the names alone, whatever order the directory gives.
//!
//! Never: interprets a file's bytes (Parquet is the cache's business), decides what is
//! committed when (the committer does), or holds a lock (the outputs lock is the
//! command's).

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::cache::CacheError;
use tbb_tables::{write_cache_table, write_table, Provenance, TableWriter};

/// Where a cache's files are kept.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A directory on this machine (`outputs/<study>/cache/`).
    Local(PathBuf),
}

/// One cache file as a listing gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its table (`nodes`, `objects`, `blobs`).
    pub table: String,
    /// Its sequence number: later files win.
    pub seq: u64,
    /// The digest of its rows that makes its name unique (empty in a legacy name).
    pub id: String,
    /// Where it is.
    pub path: PathBuf,
}

impl Backend {
    /// The root every file of the cache is named under.
    pub fn root(&self) -> &Path {
        match self {
            Backend::Local(dir) => dir,
        }
    }

    /// Whether the cache exists at all (a missing one is an empty cache).
    pub fn exists(&self) -> bool {
        match self {
            Backend::Local(dir) => dir.is_dir(),
        }
    }

    /// Every cache file directly under the root ([`parse_name`]), in `(seq, id)` order
    /// (temporary files and anything else are not cache files).
    pub fn list(&self) -> Result<Vec<Listed>, CacheError> {
        let Backend::Local(dir) = self;
        let read = std::fs::read_dir(dir).map_err(|source| io(dir, source))?;
        let mut out = Vec::new();
        for entry in read.flatten() {
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some((table, seq, id)) = parse_name(name) {
                out.push(Listed {
                    table: table.to_string(),
                    seq,
                    id: id.to_string(),
                    path,
                });
            }
        }
        out.sort_by(|a, b| (a.seq, &a.id).cmp(&(b.seq, &b.id)));
        Ok(out)
    }

    /// Opens a file for reading. Anything but a regular file under a cache file's name
    /// (a named pipe, which would block the read forever; a directory; a device) is a
    /// damaged entry, never opened.
    pub fn open(&self, path: &Path) -> Result<File, CacheError> {
        match self {
            Backend::Local(_) => tbb_diag::input::open_regular(path).map_err(|source| {
                if source.kind() == std::io::ErrorKind::InvalidInput {
                    CacheError::Damaged {
                        path: path.to_path_buf(),
                        detail: source.to_string(),
                    }
                } else {
                    io(path, source)
                }
            }),
        }
    }

    /// A file's bytes, whole.
    pub fn read(&self, path: &Path) -> Result<bytes::Bytes, CacheError> {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        self.open(path)?
            .read_to_end(&mut bytes)
            .map_err(|source| io(path, source))?;
        Ok(bytes::Bytes::from(bytes))
    }

    /// Makes the directory `path` (the root, or one under it) where files will be
    /// written.
    pub fn make_dir(&self, path: &Path) -> Result<(), CacheError> {
        match self {
            Backend::Local(_) => std::fs::create_dir_all(path).map_err(|source| io(path, source)),
        }
    }

    /// Writes one of the cache's own tables at `path`, whole or not at all.
    pub fn put_cache_table(&self, path: &Path, batch: &RecordBatch) -> Result<(), CacheError> {
        match self {
            Backend::Local(_) => Ok(write_cache_table(path, batch)?),
        }
    }

    /// Writes an analysis table at `path`, whole or not at all.
    pub fn put_table(&self, path: &Path, batch: &RecordBatch) -> Result<(), CacheError> {
        match self {
            Backend::Local(_) => Ok(write_table(path, batch, &Provenance::default())?),
        }
    }

    /// A writer of one of the cache's own tables streamed batch by batch; the file
    /// exists once [`TableWriter::finish`] returns.
    pub fn cache_table_writer(
        &self,
        path: &Path,
        schema: SchemaRef,
    ) -> Result<TableWriter, CacheError> {
        match self {
            Backend::Local(_) => Ok(TableWriter::create_cache(path, schema)?),
        }
    }

    /// Deletes a file.
    pub fn remove(&self, path: &Path) -> Result<(), CacheError> {
        match self {
            Backend::Local(_) => std::fs::remove_file(path).map_err(|source| io(path, source)),
        }
    }

    /// The directories directly under `path` (none when it does not exist).
    pub fn subdirectories(&self, path: &Path) -> Vec<PathBuf> {
        match self {
            Backend::Local(_) => std::fs::read_dir(path)
                .map(|read| read.flatten().map(|e| e.path()).collect())
                .unwrap_or_default(),
        }
    }

    /// The files directly under `path` (none when it does not exist).
    pub fn files_in(&self, path: &Path) -> Vec<PathBuf> {
        match self {
            Backend::Local(_) => std::fs::read_dir(path)
                .map(|read| {
                    read.flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                        .map(|e| e.path())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Deletes a directory and everything under it.
    pub fn remove_dir(&self, path: &Path) -> Result<(), CacheError> {
        match self {
            Backend::Local(_) => std::fs::remove_dir_all(path).map_err(|source| io(path, source)),
        }
    }

    /// Deletes the temporary files a killed writer left behind (call under the outputs
    /// lock: another writer's are not yet renamed).
    pub fn remove_temporaries(&self) -> Result<(), CacheError> {
        let Backend::Local(dir) = self;
        let Ok(read) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in read.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "tmp") {
                self.remove(&path)?;
            }
        }
        Ok(())
    }
}

/// `(table, seq, id)` of a cache file's name: `<table>-<seq>-<id>.parquet`, `<id>`
/// lowercase hex, or `<table>-<seq>.parquet` (id empty); `None` for any other name.
pub fn parse_name(name: &str) -> Option<(&str, u64, &str)> {
    let stem = name.strip_suffix(".parquet")?;
    let mut parts = stem.splitn(3, '-');
    let table = parts.next().filter(|t| !t.is_empty())?;
    let seq = parts.next()?.parse::<u64>().ok()?;
    let id = parts.next().unwrap_or("");
    let hex = id
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then_some((table, seq, id))
}

fn io(path: &Path, source: std::io::Error) -> CacheError {
    CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_and_without_a_writer_digest_parse_and_order_by_seq_then_digest() {
        assert_eq!(
            parse_name("nodes-00000012-0a1b.parquet"),
            Some(("nodes", 12, "0a1b"))
        );
        assert_eq!(parse_name("blobs-00000003.parquet"), Some(("blobs", 3, "")));
        for not_ours in [
            "nodes-00000012-0a1b.parquet.tmp",
            "nodes-x.parquet",
            "nodes-1-XYZ.parquet",
            "-1.parquet",
            "lease",
        ] {
            assert_eq!(parse_name(not_ours), None, "{not_ours}");
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for name in [
            "nodes-00000002-ff.parquet",
            "nodes-00000002-0f.parquet",
            "nodes-00000002.parquet",
            "nodes-00000001-ff.parquet",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap_or_else(|e| panic!("{e}"));
        }
        let order: Vec<(u64, String)> = Backend::Local(dir.path().to_path_buf())
            .list()
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|l| (l.seq, l.id))
            .collect();
        assert_eq!(
            order,
            [(1, "ff"), (2, ""), (2, "0f"), (2, "ff")].map(|(s, i)| (s, i.to_string()))
        );
    }
}
