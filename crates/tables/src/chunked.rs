//! Published tables written a row group at a time, so that a table of a large study is
//! never built as one record batch beside the rows it is built from.
//!
//! Owns: the chunk size and why it leaves the bytes alone. The Parquet writer cuts a
//! whole table into row groups of [`crate::PUBLISHED_ROW_GROUP_SIZE`] rows and encodes each on
//! its own; how it pages a column depends on that row group's values alone (its
//! mini-batches are larger when a column of the row group has no nulls or only
//! nulls). Chunks of exactly one row group hand it the same slices the whole table
//! would, so the file is byte for byte the one [`crate::write_table`] writes (a test
//! holds it so). A smaller chunk would not: a chunk without nulls in a column that has
//! some elsewhere in its row group is paged differently.
//!
//! Never: decides what a column holds (the row builders do).

use std::path::Path;

use arrow_array::RecordBatch;

use super::{Layout, Provenance, StoreError, TableWriter};

/// Rows built and written at once: one row group.
pub const CHUNK_ROWS: usize = crate::PUBLISHED_ROW_GROUP_SIZE;

/// Writes the table of `rows` to `path` atomically, as [`crate::write_table`] writes the batch
/// `build(rows)`, building [`CHUNK_ROWS`] rows at a time.
pub fn write_table_chunked<T>(
    path: &Path,
    rows: &[T],
    provenance: &Provenance,
    build: impl Fn(&[T]) -> Result<RecordBatch, StoreError>,
) -> Result<(), StoreError> {
    let mut sink = Sink::new(path, provenance);
    let mut chunks = rows.chunks(CHUNK_ROWS);
    // The first chunk (an empty one for no rows) gives the schema.
    sink.write(&build(chunks.next().unwrap_or(&[]))?)?;
    for chunk in chunks {
        sink.write(&build(chunk)?)?;
    }
    sink.finish()
}

/// The file of a chunked table, opened by its first batch (which gives the schema).
struct Sink<'a> {
    path: &'a Path,
    provenance: &'a Provenance,
    writer: Option<TableWriter>,
}

impl<'a> Sink<'a> {
    fn new(path: &'a Path, provenance: &'a Provenance) -> Self {
        Sink {
            path,
            provenance,
            writer: None,
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.writer.insert(TableWriter::open(
                self.path,
                batch.schema(),
                self.provenance,
                Layout::Published,
            )?),
        };
        writer.write(batch)
    }

    fn finish(self) -> Result<(), StoreError> {
        match self.writer {
            Some(writer) => writer.finish(),
            None => Ok(()),
        }
    }
}

/// A table written as its rows come, one row group at a time, for rows that are never
/// all in memory at once (the requests of a large study, read back a bucket at a
/// time): the file is byte for byte the one [`write_table_chunked`] writes of the same
/// rows.
pub struct ChunkedWriter<'a, T, B> {
    sink: Sink<'a>,
    build: B,
    /// The rows of the row group being filled.
    pending: Vec<T>,
}

impl<'a, T, B> ChunkedWriter<'a, T, B>
where
    B: Fn(&[T]) -> Result<RecordBatch, StoreError>,
{
    /// A writer of `path` building each row group's batch with `build`.
    pub fn new(path: &'a Path, provenance: &'a Provenance, build: B) -> Self {
        ChunkedWriter {
            sink: Sink::new(path, provenance),
            build,
            pending: Vec::new(),
        }
    }

    /// Adds one row, writing its row group when it fills.
    pub fn push(&mut self, row: T) -> Result<(), StoreError> {
        if self.pending.capacity() == 0 {
            self.pending.reserve_exact(CHUNK_ROWS);
        }
        self.pending.push(row);
        if self.pending.len() == CHUNK_ROWS {
            self.sink.write(&(self.build)(&self.pending)?)?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Writes the last row group (for a table without rows, the empty batch that gives
    /// its schema) and renames the file into place.
    pub fn finish(mut self) -> Result<(), StoreError> {
        if !self.pending.is_empty() || self.sink.writer.is_none() {
            self.sink.write(&(self.build)(&self.pending)?)?;
        }
        self.sink.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_table, TableBuilder, PUBLISHED_ROW_GROUP_SIZE};

    fn build(rows: &[u64]) -> Result<RecordBatch, StoreError> {
        TableBuilder::new()
            .u64("n", rows.iter().copied())
            // Few distinct values (a dictionary), then many (the writer gives it up).
            .text("few", rows.iter().map(|n| format!("level {}", n % 7)))
            // Nulls in some row groups only, and none at all.
            .u64_opt(
                "early",
                rows.iter().map(|n| (*n < 100 && n % 3 == 0).then_some(*n)),
            )
            .u32_opt("never", rows.iter().map(|_| None))
            .text_opt(
                "many",
                rows.iter()
                    .map(|n| (n % 5 != 0).then(|| format!("row {n} {}", n * 7919))),
            )
            .build("t")
    }

    #[test]
    fn a_table_written_in_chunks_or_a_row_at_a_time_is_the_table_written_whole_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let provenance = Provenance {
            manifest_hash: "m".into(),
            lockfile_hash: "l".into(),
            node_key: "k".into(),
        };
        // None, one partial row group, and full row groups and a partial one.
        for n in [0, 5, 2 * PUBLISHED_ROW_GROUP_SIZE + 17] {
            let rows: Vec<u64> = (0..n as u64).collect();
            let whole = dir.path().join(format!("whole-{n}.parquet"));
            let chunked = dir.path().join(format!("chunked-{n}.parquet"));
            let batch = build(&rows).unwrap_or_else(|e| panic!("{e}"));
            write_table(&whole, &batch, &provenance).unwrap_or_else(|e| panic!("{e}"));
            write_table_chunked(&chunked, &rows, &provenance, build)
                .unwrap_or_else(|e| panic!("{e}"));
            let pushed = dir.path().join(format!("pushed-{n}.parquet"));
            let mut writer = ChunkedWriter::new(&pushed, &provenance, build);
            for &row in &rows {
                writer.push(row).unwrap_or_else(|e| panic!("{e}"));
            }
            writer.finish().unwrap_or_else(|e| panic!("{e}"));
            // A published table's row groups hold PUBLISHED_ROW_GROUP_SIZE rows each.
            let file = std::fs::File::open(&whole).unwrap_or_else(|e| panic!("{e}"));
            let groups =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .metadata()
                    .row_groups()
                    .iter()
                    .map(|g| g.num_rows() as usize)
                    .collect::<Vec<_>>();
            let expected = match n {
                0 => vec![],
                5 => vec![5],
                _ => vec![PUBLISHED_ROW_GROUP_SIZE, PUBLISHED_ROW_GROUP_SIZE, 17],
            };
            assert_eq!(groups, expected, "{n} rows");
            let whole = std::fs::read(&whole).ok();
            assert!(whole.is_some());
            assert!(
                whole == std::fs::read(&chunked).ok(),
                "{n} rows: the bytes differ"
            );
            assert!(
                whole == std::fs::read(&pushed).ok(),
                "{n} rows pushed one by one: the bytes differ"
            );
        }
    }
}
