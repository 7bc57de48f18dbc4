//! Published tables written a row group at a time, so that a table of a large study is
//! never built as one record batch beside the rows it is built from.
//!
//! Owns: the chunk size and why it leaves the bytes alone. The Parquet writer cuts a
//! whole table into row groups of [`crate::ROW_GROUP_SIZE`] rows and encodes each on
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
pub const CHUNK_ROWS: usize = crate::ROW_GROUP_SIZE;

/// Writes the table of `rows` to `path` atomically, as [`crate::write_table`] writes the batch
/// `build(rows)`, building [`CHUNK_ROWS`] rows at a time.
pub fn write_table_chunked<T>(
    path: &Path,
    rows: &[T],
    provenance: &Provenance,
    build: impl Fn(&[T]) -> Result<RecordBatch, StoreError>,
) -> Result<(), StoreError> {
    let mut chunks = rows.chunks(CHUNK_ROWS);
    // The first chunk (an empty one for no rows) gives the schema.
    let first = build(chunks.next().unwrap_or(&[]))?;
    let mut writer = TableWriter::open(path, first.schema(), provenance, Layout::Published)?;
    writer.write(&first)?;
    drop(first);
    for chunk in chunks {
        writer.write(&build(chunk)?)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_table, TableBuilder, ROW_GROUP_SIZE};

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
    fn a_table_written_in_chunks_is_the_table_written_whole_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let provenance = Provenance {
            manifest_hash: "m".into(),
            lockfile_hash: "l".into(),
            node_key: "k".into(),
        };
        // None, one partial row group, and full row groups and a partial one.
        for n in [0, 5, 2 * ROW_GROUP_SIZE + 17] {
            let rows: Vec<u64> = (0..n as u64).collect();
            let whole = dir.path().join(format!("whole-{n}.parquet"));
            let chunked = dir.path().join(format!("chunked-{n}.parquet"));
            let batch = build(&rows).unwrap_or_else(|e| panic!("{e}"));
            write_table(&whole, &batch, &provenance).unwrap_or_else(|e| panic!("{e}"));
            write_table_chunked(&chunked, &rows, &provenance, build)
                .unwrap_or_else(|e| panic!("{e}"));
            let (whole, chunked) = (std::fs::read(&whole).ok(), std::fs::read(&chunked).ok());
            assert!(whole.is_some());
            assert!(whole == chunked, "{n} rows: the bytes differ");
        }
    }
}
