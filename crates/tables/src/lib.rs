//! The table contract in code: the rows and Arrow layouts of the tables researchers
//! load (`docs/architecture.md`, "The table contract"), and their Parquet files.
//!
//! Owns: the column layout of each table ([`rows`]), the levels and constants a row
//! carries ([`levels`]), the names of published files shared across crates ([`paths`]), the Parquet writer settings (zstd, row-group
//! size, provenance in the key-value metadata: tbb version, manifest hash, lockfile
//! hash), atomic writes (temporary file, fsync, rename), reading tables back, and
//! ([`requests`]) how a row of `requests.parquet` is read off a stored transcript.
//!
//! Never: decides what goes into an episode or analysis row (the harness, the pipeline
//! and the analyses do), or writes anything outside the path it is given.

pub mod analyses;
pub mod chunked;
pub mod levels;
pub mod name;
pub mod paths;
pub mod requests;
pub mod rows;
pub mod scenarios;
pub mod stored_requests;
pub mod typed;

pub use name::Name;
pub use rows::{EpisodeRow, Placement, RequestRow, VariantRow};
pub use scenarios::ScenarioEpisodeRow;
pub use tbb_harness::HexKey;
pub use typed::{columns_of, read_rows, TableRow};

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use thiserror::Error;

/// Rows per row group of a cache table (which also closes a row group at
/// [`CACHE_ROW_GROUP_BYTES`]).
pub const ROW_GROUP_SIZE: usize = 64 * 1024;

/// Rows per row group of a published table. A writer builds and encodes a whole row
/// group in memory before it writes it: at 65,536 rows the episodes table's builders
/// and encoders were about 70 MB (47 and 25) of the capacity study's peak at 4 repeats
/// (BENCHMARKS.md, "Published row groups of 16,384 rows"). A quarter of that costs the
/// files a few percent more bytes (a dictionary and statistics per row group), and a
/// notebook still reads one configuration's rows without the rest.
pub const PUBLISHED_ROW_GROUP_SIZE: usize = 16 * 1024;

/// Bytes after which a cache table's writer closes its row group (checked as each batch
/// is written, so a single batch is never split): a writer buffers a whole row group
/// before it writes it, and 65,536 rows of transcripts ran to ~100 MB when the cache was
/// compacted (BENCHMARKS.md, "The report's index out of the cache, compaction in bounded
/// row groups").
pub const CACHE_ROW_GROUP_BYTES: usize = 4 * 1024 * 1024;

/// A table that cannot be written or read.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum StoreError {
    /// File system.
    #[error("{}: {source}", path.display())]
    #[diagnostic(code(tbb::store::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Parquet encoding or decoding.
    #[error("{}: {source}", path.display())]
    #[diagnostic(code(tbb::store::parquet))]
    Parquet {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: ParquetError,
    },
    /// Arrow (a column of the wrong length or type: a bug in a table's layout).
    #[error("building table {table}: {source}")]
    #[diagnostic(code(tbb::store::arrow))]
    Arrow {
        /// Table name.
        table: String,
        /// Cause.
        source: ArrowError,
    },
    /// A table read back does not have its row struct's layout (a column missing, of
    /// another type, or null where a value is required).
    #[error("the `{table}` table is not laid out as this version of tbb writes it: {detail}")]
    #[diagnostic(
        code(tbb::store::layout),
        help("re-apply the study that writes the table with this version of tbb")
    )]
    Layout {
        /// Table name.
        table: String,
        /// What does not fit.
        detail: String,
    },
}

/// Where a table came from, written into its Parquet key-value metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    /// blake3 of the manifest the table was produced for.
    pub manifest_hash: String,
    /// blake3 of the lockfile in force.
    pub lockfile_hash: String,
    /// Key of the pipeline node that wrote the table (empty outside the pipeline).
    pub node_key: String,
}

/// Builds a record batch column by column.
#[derive(Default)]
pub struct TableBuilder {
    fields: Vec<Field>,
    columns: Vec<ArrayRef>,
}

impl TableBuilder {
    /// An empty table.
    pub fn new() -> TableBuilder {
        TableBuilder::default()
    }

    fn push(mut self, name: &str, data_type: DataType, nullable: bool, column: ArrayRef) -> Self {
        self.fields.push(Field::new(name, data_type, nullable));
        self.columns.push(column);
        self
    }

    /// A UTF-8 column.
    pub fn text<S: AsRef<str>>(self, name: &str, values: impl IntoIterator<Item = S>) -> Self {
        let mut b = StringBuilder::new();
        for v in values {
            b.append_value(v.as_ref());
        }
        self.push(name, DataType::Utf8, false, Arc::new(b.finish()))
    }

    /// A nullable UTF-8 column.
    pub fn text_opt<S: AsRef<str>>(
        self,
        name: &str,
        values: impl IntoIterator<Item = Option<S>>,
    ) -> Self {
        let mut b = StringBuilder::new();
        for v in values {
            b.append_option(v.as_ref().map(std::convert::AsRef::as_ref));
        }
        self.push(name, DataType::Utf8, true, Arc::new(b.finish()))
    }

    /// A u32 column.
    pub fn u32(self, name: &str, values: impl IntoIterator<Item = u32>) -> Self {
        let mut b = UInt32Builder::new();
        for v in values {
            b.append_value(v);
        }
        self.push(name, DataType::UInt32, false, Arc::new(b.finish()))
    }

    /// A nullable u32 column.
    pub fn u32_opt(self, name: &str, values: impl IntoIterator<Item = Option<u32>>) -> Self {
        let mut b = UInt32Builder::new();
        for v in values {
            b.append_option(v);
        }
        self.push(name, DataType::UInt32, true, Arc::new(b.finish()))
    }

    /// A u64 column.
    pub fn u64(self, name: &str, values: impl IntoIterator<Item = u64>) -> Self {
        let mut b = UInt64Builder::new();
        for v in values {
            b.append_value(v);
        }
        self.push(name, DataType::UInt64, false, Arc::new(b.finish()))
    }

    /// A nullable u64 column.
    pub fn u64_opt(self, name: &str, values: impl IntoIterator<Item = Option<u64>>) -> Self {
        let mut b = UInt64Builder::new();
        for v in values {
            b.append_option(v);
        }
        self.push(name, DataType::UInt64, true, Arc::new(b.finish()))
    }

    /// An f64 column.
    pub fn f64(self, name: &str, values: impl IntoIterator<Item = f64>) -> Self {
        let mut b = Float64Builder::new();
        for v in values {
            b.append_value(v);
        }
        self.push(name, DataType::Float64, false, Arc::new(b.finish()))
    }

    /// A nullable f64 column: `None` is a null ("undefined"), never NaN.
    pub fn f64_opt(self, name: &str, values: impl IntoIterator<Item = Option<f64>>) -> Self {
        let mut b = Float64Builder::new();
        for v in values {
            b.append_option(v);
        }
        self.push(name, DataType::Float64, true, Arc::new(b.finish()))
    }

    /// A boolean column.
    pub fn bool(self, name: &str, values: impl IntoIterator<Item = bool>) -> Self {
        let mut b = BooleanBuilder::new();
        for v in values {
            b.append_value(v);
        }
        self.push(name, DataType::Boolean, false, Arc::new(b.finish()))
    }

    /// A nullable boolean column.
    pub fn bool_opt(self, name: &str, values: impl IntoIterator<Item = Option<bool>>) -> Self {
        let mut b = BooleanBuilder::new();
        for v in values {
            b.append_option(v);
        }
        self.push(name, DataType::Boolean, true, Arc::new(b.finish()))
    }

    /// The batch.
    pub fn build(self, table: &str) -> Result<RecordBatch, StoreError> {
        RecordBatch::try_new(Arc::new(Schema::new(self.fields)), self.columns).map_err(|source| {
            StoreError::Arrow {
                table: table.to_string(),
                source,
            }
        })
    }
}

/// Writes a batch to `path` atomically: into a temporary file beside it, fsync, rename.
/// Readers never see a partial table.
pub fn write_table(
    path: &Path,
    batch: &RecordBatch,
    provenance: &Provenance,
) -> Result<(), StoreError> {
    let mut writer = TableWriter::open(path, batch.schema(), provenance, Layout::Published)?;
    writer.write(batch)?;
    writer.finish()
}

/// Writes one of the cache's own tables atomically, like [`write_table`], laid out for
/// values that are all distinct ([`Layout::Distinct`]). Never for a published table.
pub fn write_cache_table(path: &Path, batch: &RecordBatch) -> Result<(), StoreError> {
    let mut writer = TableWriter::open(
        path,
        batch.schema(),
        &Provenance::default(),
        Layout::Distinct,
    )?;
    writer.write(batch)?;
    writer.finish()
}

/// How a table's pages are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Dictionary pages where they pay, zstd level 3: published tables, whose columns
    /// repeat (configurations, cells, verdicts) and which users download and keep.
    Published,
    /// No dictionary, zstd level 1: the cache's tables, whose large columns (keys,
    /// payloads) hold values that all differ, so a dictionary is built only to be
    /// abandoned; for files no one but tbb reads (BENCHMARKS.md, issue 15's second
    /// pass, has what it saved).
    Distinct,
}

/// A table written batch by batch, for tables too large to hold at once; atomic like
/// [`write_table`]: nothing appears at `path` until [`TableWriter::finish`].
pub struct TableWriter {
    path: PathBuf,
    tmp: PathBuf,
    schema: arrow_schema::SchemaRef,
    /// `None` once finished (or given up on).
    writer: Option<ArrowWriter<Digesting>>,
    /// Whether the footer records the digest of the bytes before it ([`BODY_DIGEST`]).
    digest: bool,
    /// Renamed into place: nothing to clean up.
    committed: bool,
}

impl Drop for TableWriter {
    /// A writer dropped before [`TableWriter::finish`] succeeded (an error, a panic)
    /// removes its temporary file: a failed write leaves nothing behind.
    fn drop(&mut self) {
        if !self.committed {
            drop(self.writer.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

impl TableWriter {
    /// Opens the temporary file for one of the cache's own tables ([`write_cache_table`]).
    pub fn create_cache(
        path: &Path,
        schema: arrow_schema::SchemaRef,
    ) -> Result<TableWriter, StoreError> {
        TableWriter::open(path, schema, &Provenance::default(), Layout::Distinct)
    }

    fn open(
        path: &Path,
        schema: arrow_schema::SchemaRef,
        provenance: &Provenance,
        layout: Layout,
    ) -> Result<TableWriter, StoreError> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let pq = |source| StoreError::Parquet {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let metadata = vec![
            KeyValue::new(
                "tbb.version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            KeyValue::new(
                "tbb.manifest_hash".to_string(),
                provenance.manifest_hash.clone(),
            ),
            KeyValue::new(
                "tbb.lockfile_hash".to_string(),
                provenance.lockfile_hash.clone(),
            ),
            KeyValue::new("tbb.node_key".to_string(), provenance.node_key.clone()),
        ];
        let (level, dictionary, group_rows, group_bytes) = match layout {
            Layout::Published => (3, true, PUBLISHED_ROW_GROUP_SIZE, None),
            Layout::Distinct => (1, false, ROW_GROUP_SIZE, Some(CACHE_ROW_GROUP_BYTES)),
        };
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(level).map_err(pq)?))
            .set_dictionary_enabled(dictionary)
            .set_max_row_group_row_count(Some(group_rows))
            .set_max_row_group_bytes(group_bytes)
            .set_key_value_metadata(Some(metadata.clone()))
            // No creation time or host in the file: the same rows give the same bytes.
            .set_created_by(format!("tbb {}", env!("CARGO_PKG_VERSION")))
            .build();
        // The provenance also goes into the Arrow schema's metadata, where pyarrow and
        // polars show it (`table.schema.metadata`).
        let schema = Arc::new(
            schema.as_ref().clone().with_metadata(
                metadata
                    .iter()
                    .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
                    .collect::<std::collections::HashMap<String, String>>(),
            ),
        );
        let tmp = temporary_beside(path);
        let file = Digesting {
            file: File::create(&tmp).map_err(io)?,
            hasher: blake3::Hasher::new(),
            len: 0,
        };
        let mut table = TableWriter {
            path: path.to_path_buf(),
            tmp,
            schema: schema.clone(),
            writer: None,
            committed: false,
            digest: layout == Layout::Distinct,
        };
        // On failure `table` drops and takes the temporary file with it.
        table.writer = Some(ArrowWriter::try_new(file, schema, Some(props)).map_err(pq)?);
        Ok(table)
    }

    /// Appends a batch (of the table's schema, metadata aside).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        let batch = batch
            .clone()
            .with_schema(self.schema.clone())
            .map_err(|source| StoreError::Arrow {
                table: self.path.display().to_string(),
                source,
            })?;
        let Some(writer) = self.writer.as_mut() else {
            return Err(StoreError::Io {
                path: self.path.clone(),
                source: std::io::Error::other("the table writer is already closed"),
            });
        };
        writer.write(&batch).map_err(|source| StoreError::Parquet {
            path: self.path.clone(),
            source,
        })
    }

    /// Closes, fsyncs and renames the table into place.
    pub fn finish(mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let pq = |source| StoreError::Parquet {
            path: path.clone(),
            source,
        };
        let Some(mut writer) = self.writer.take() else {
            return Err(io(std::io::Error::other(
                "the table writer is already closed",
            )));
        };
        if self.digest {
            // Every row group out and through the digest; only the footer is left.
            writer.flush().map_err(pq)?;
            writer.sync().map_err(io)?;
            let body = writer.inner();
            let value = format!("{}:{}", body.len, body.hasher.finalize().to_hex());
            writer.append_key_value_metadata(KeyValue::new(BODY_DIGEST.to_string(), value));
        }
        let mut file = writer.into_inner().map_err(pq)?.file;
        file.flush().map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(io)?;
        self.committed = true;
        sync_dir(&self.path).map_err(io)
    }
}

/// The footer key of a cache file's digest: `<length>:<blake3 hex>` of the file's
/// first `length` bytes, everything Parquet writes before its page indexes and footer
/// (the magic and every row group). [`check_body_digest`] compares it with the bytes.
pub const BODY_DIGEST: &str = "tbb.body_blake3";

/// The file under a table being written: everything written through it is counted and
/// hashed, for [`BODY_DIGEST`].
struct Digesting {
    file: File,
    hasher: blake3::Hasher,
    len: u64,
}

impl std::io::Write for Digesting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Whether a cache file's bytes are those its footer's [`BODY_DIGEST`] describes:
/// `Ok(true)` when they are, `Ok(false)` when the file has no digest (written before
/// digests were: nothing to compare), and `Err` saying what differs when the bytes
/// were changed or cut after tbb wrote them. Reads the footer, then hashes the body:
/// the whole file once, never decoded.
pub fn check_body_digest(bytes: &bytes::Bytes) -> Result<bool, String> {
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(bytes)
        .map_err(|e| e.to_string())?;
    let Some(recorded) = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == BODY_DIGEST))
        .and_then(|k| k.value.clone())
    else {
        return Ok(false);
    };
    let (len, hex) = recorded
        .split_once(':')
        .ok_or_else(|| format!("its footer's digest `{recorded}` is not `length:blake3`"))?;
    let len: usize = len
        .parse()
        .map_err(|_| format!("its footer's digest `{recorded}` is not `length:blake3`"))?;
    let body = bytes.get(..len).ok_or_else(|| {
        format!(
            "it is {} bytes, shorter than the {len} its footer records",
            bytes.len()
        )
    })?;
    if blake3::hash(body).to_hex().as_str() != hex {
        return Err(format!(
            "its first {len} bytes differ from the blake3 digest its footer records: \
             it was changed after tbb wrote it"
        ));
    }
    Ok(true)
}

/// A temporary name beside `path`, `<name>.<pid>-<n>.tmp`, that no other writer uses at
/// once: writers sharing a directory (the shards of a study) may write files of one
/// final name (a cache file is named by its rows' digest), and one's rename must never
/// take away, or publish, the other's half-written file. The name ends in `.tmp`, which
/// is how a cleanup knows what a killed writer left.
pub fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    PathBuf::from(name)
}

/// Writes a text file atomically, like [`write_table`]: a temporary file beside it
/// ([`temporary_beside`]), fsync, rename, then the directory.
pub fn write_text(path: &Path, text: &str) -> std::io::Result<()> {
    write_text_parts(path, &[text])
}

/// [`write_text`] of `parts` one after another, without joining them first (a page of
/// every episode runs to tens of megabytes).
pub fn write_text_parts(path: &Path, parts: &[&str]) -> std::io::Result<()> {
    write_text_with(path, |out| {
        for part in parts {
            out.write_all(part.as_bytes())?;
        }
        Ok(())
    })
}

/// Writes a file at `path` atomically as [`write_text_parts`] does, from what `write`
/// writes to it (through a buffer), so that a large text is never held whole.
pub fn write_text_with(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temporary_beside(path);
    let written = (|| {
        let mut out = std::io::BufWriter::new(File::create(&tmp)?);
        write(&mut out)?;
        let f = out
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        // A failed write leaves nothing behind, not even the temporary file.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(path)
}

/// Makes a rename in `path`'s directory durable (a no-op where directories cannot be
/// opened as files).
pub fn sync_dir(path: &Path) -> std::io::Result<()> {
    match path.parent().map(File::open) {
        Some(Ok(dir)) => dir.sync_all().or(Ok(())),
        _ => Ok(()),
    }
}

/// The key-value metadata of a table, read from its footer only.
pub fn read_metadata(path: &Path) -> Result<Vec<(String, String)>, StoreError> {
    // Never a named pipe (it would block plan forever): regular files only.
    let file = tbb_diag::input::open_regular(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|source| StoreError::Parquet {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(key_values(&builder))
}

/// The file's key-value metadata, as pairs.
fn key_values(builder: &ParquetRecordBatchReaderBuilder<File>) -> Vec<(String, String)> {
    builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// A table read back: its batches and its key-value metadata.
pub type Table = (Vec<RecordBatch>, Vec<(String, String)>);

/// Reads a whole table back, with its key-value metadata.
pub fn read_table(path: &Path) -> Result<Table, StoreError> {
    let pq = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    // Never a named pipe (it would block plan forever): regular files only.
    let file = tbb_diag::input::open_regular(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq)?;
    let metadata = key_values(&builder);
    let reader = builder.build().map_err(pq)?;
    let batches = reader
        .collect::<Result<Vec<_>, ArrowError>>()
        .map_err(|e| pq(ParquetError::External(Box::new(e))))?;
    Ok((batches, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Float64Array};

    #[test]
    fn f64_opt_writes_nulls_not_nan() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("t.parquet");
        let batch = TableBuilder::new()
            .f64_opt("share", [Some(0.5), None, Some(0.0)])
            .build("t")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(batch.schema().field(0).is_nullable());
        write_table(&path, &batch, &Provenance::default()).unwrap_or_else(|e| panic!("{e}"));
        let (batches, _) = read_table(&path).unwrap_or_else(|e| panic!("{e}"));
        let c = batches[0]
            .column_by_name("share")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .unwrap_or_else(|| panic!("share"));
        assert_eq!(c.null_count(), 1);
        let got: Vec<Option<f64>> = c.iter().collect();
        assert_eq!(got, [Some(0.5), None, Some(0.0)]);
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".tmp"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Two writers of one final name at once (two shards committing the same rows,
    /// whose cache file is named by their digest) each write their own temporary file:
    /// neither's rename takes the other's, and the file ends whole.
    #[test]
    fn two_writers_of_one_name_at_once_both_finish() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let batch = TableBuilder::new()
            .f64_opt("share", [Some(0.5)])
            .build("t")
            .unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("objects-00000001-d180.parquet");
        let open =
            || TableWriter::create_cache(&path, batch.schema()).unwrap_or_else(|e| panic!("{e}"));
        let (mut one, mut two) = (open(), open());
        for writer in [&mut one, &mut two] {
            writer.write(&batch).unwrap_or_else(|e| panic!("{e}"));
        }
        one.finish().unwrap_or_else(|e| panic!("{e}"));
        two.finish().unwrap_or_else(|e| panic!("{e}"));
        let (back, _) = read_table(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.iter().map(RecordBatch::num_rows).sum::<usize>(), 1);
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    /// The cache's tables close a row group once it passes [`CACHE_ROW_GROUP_BYTES`]
    /// (checked as each batch is written): a writer holds one row group at a time, so
    /// rows of transcripts copied a batch at a time never pile up by the 65,536. A
    /// published table of the same rows keeps them in one row group.
    #[test]
    fn cache_tables_close_a_row_group_at_a_bounded_size() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // 40 rows of 512 KiB of hex digits (20 MiB; about half that once compressed).
        let rows: Vec<String> = (0..40u32)
            .map(|i| {
                let mut bytes = vec![0u8; 256 * 1024];
                blake3::Hasher::new()
                    .update(&i.to_le_bytes())
                    .finalize_xof()
                    .fill(&mut bytes);
                bytes.iter().map(|b| format!("{b:02x}")).collect()
            })
            .collect();
        let batch = TableBuilder::new()
            .text("payload", &rows)
            .build("t")
            .unwrap_or_else(|e| panic!("{e}"));
        let groups = |path: &Path| {
            let file = File::open(path).unwrap_or_else(|e| panic!("{e}"));
            ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap_or_else(|e| panic!("{e}"))
                .metadata()
                .num_row_groups()
        };
        // Written a few rows at a time, as compaction copies them.
        let cache = dir.path().join("nodes-00000001-ab.parquet");
        let mut writer =
            TableWriter::create_cache(&cache, batch.schema()).unwrap_or_else(|e| panic!("{e}"));
        for start in (0..40).step_by(2) {
            writer
                .write(&batch.slice(start, 2))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        assert!(groups(&cache) >= 2, "{} row groups", groups(&cache));
        let published = dir.path().join("published.parquet");
        write_table(&published, &batch, &Provenance::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(groups(&published), 1);
        let (back, _) = read_table(&cache).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.iter().map(RecordBatch::num_rows).sum::<usize>(), 40);
    }

    #[test]
    fn a_failed_text_write_leaves_no_tmp_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // The destination is a non-empty directory: the final rename must fail.
        let path = dir.path().join("taken");
        std::fs::create_dir_all(path.join("inside")).unwrap_or_else(|e| panic!("{e}"));
        assert!(write_text(&path, "text").is_err());
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        write_text(&dir.path().join("ok.txt"), "text").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_streamed_text_is_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("index.html");
        write_text_with(&path, |out| {
            for row in 0..10_000 {
                writeln!(out, "<tr><td>{row}</td></tr>")?;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text.lines().count(), 10_000);
        assert!(text.ends_with("<tr><td>9999</td></tr>\n"));
        // A writer that fails halfway leaves the earlier file as it was, and no
        // temporary file.
        let failed = write_text_with(&path, |out| {
            out.write_all(b"half a page")?;
            Err(std::io::Error::other("the rows ran out"))
        });
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}")),
            text
        );
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_failed_or_abandoned_table_write_leaves_no_tmp_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let batch = TableBuilder::new()
            .f64_opt("share", [Some(0.5)])
            .build("t")
            .unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("taken.parquet");
        std::fs::create_dir_all(path.join("inside")).unwrap_or_else(|e| panic!("{e}"));
        assert!(write_table(&path, &batch, &Provenance::default()).is_err());
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        let abandoned = dir.path().join("abandoned.parquet");
        let writer = TableWriter::open(
            &abandoned,
            batch.schema(),
            &Provenance::default(),
            Layout::Published,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leftovers(dir.path()).len(), 1, "written while open");
        drop(writer);
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        assert!(!abandoned.exists());
    }
}
