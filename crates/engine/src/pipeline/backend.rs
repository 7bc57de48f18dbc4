//! Where a cache's files are kept: the seam of a remote cache.
//!
//! The cache ([`super::cache`]) owns its format and its commit protocol (blobs, then
//! objects, then the nodes that refer to them; later files win). A backend owns only
//! storing immutable files: listing them, reading one, writing one so that it exists
//! whole or not at all, deleting one. The one backend today is a local directory
//! ([`Backend::Local`]: temporary file, fsync, rename). A store on object storage goes
//! beside it as a second variant with the same operations: its writes create-only and
//! its names unique per writer, its listing the union of every writer's files.
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

    /// Every `<table>-<seq>-<writer>.parquet` (or, as written before writers were named,
    /// `<table>-<seq>.parquet`) file directly under the root, by sequence number and then
    /// name, so that files of two writers with one number keep one order (temporary
    /// files and anything else are not cache files).
    pub fn list(&self) -> Result<Vec<Listed>, CacheError> {
        let Backend::Local(dir) = self;
        let read = std::fs::read_dir(dir).map_err(|source| io(dir, source))?;
        let mut out = Vec::new();
        for entry in read.flatten() {
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(stem) = name.strip_suffix(".parquet") else {
                continue;
            };
            let Some((table, numbered)) = stem.split_once('-') else {
                continue;
            };
            let seq = numbered
                .split_once('-')
                .map_or(numbered, |(seq, _writer)| seq);
            if let Ok(seq) = seq.parse::<u64>() {
                out.push(Listed {
                    table: table.to_string(),
                    seq,
                    path,
                });
            }
        }
        out.sort_by(|a, b| (a.seq, &a.path).cmp(&(b.seq, &b.path)));
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

fn io(path: &Path, source: std::io::Error) -> CacheError {
    CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}
