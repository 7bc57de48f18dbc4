//! Reading and rewriting a study's cache files by hand, as the tests that check that
//! tampering is caught do: the node files are Parquet with a row per node (`kind`, `id`,
//! `payload`, …).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use serde_json::Value;

/// A Parquet file as one batch.
pub fn read(path: &Path) -> RecordBatch {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(1 << 20).build())
        .unwrap_or_else(|e| panic!("{e}"));
    let batches: Vec<RecordBatch> = reader
        .map(|b| b.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| panic!("{} is empty", path.display()));
    arrow_select::concat::concat_batches(&schema, &batches).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes `batch` as the whole Parquet file at `path`.
pub fn write(path: &Path, batch: &RecordBatch) {
    let file = File::create(path).unwrap_or_else(|e| panic!("{e}"));
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).unwrap_or_else(|e| panic!("{e}"));
    w.write(batch).unwrap_or_else(|e| panic!("{e}"));
    w.close().unwrap_or_else(|e| panic!("{e}"));
}

/// A text column.
pub fn strings<'a>(batch: &'a RecordBatch, column: &str) -> &'a StringArray {
    batch
        .column_by_name(column)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .unwrap_or_else(|| panic!("no text column {column}"))
}

/// An unsigned integer column (`u32` or `u64`) as `u64`s, a null as 0.
pub fn numbers(batch: &RecordBatch, column: &str) -> Vec<u64> {
    let c = batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .as_any();
    if let Some(c) = c.downcast_ref::<arrow_array::UInt64Array>() {
        return (0..c.len())
            .map(|r| if c.is_null(r) { 0 } else { c.value(r) })
            .collect();
    }
    let c = c
        .downcast_ref::<arrow_array::UInt32Array>()
        .unwrap_or_else(|| panic!("{column} is not an unsigned integer column"));
    (0..c.len())
        .map(|r| {
            if c.is_null(r) {
                0
            } else {
                u64::from(c.value(r))
            }
        })
        .collect()
}

/// Rewrites the stored payload of the first node of `kind`, in cache file order, for
/// which `edit` changes something, and writes that cache file back. Returns the node's
/// identity.
pub fn rewrite_one_payload(cache: &Path, kind: &str, edit: impl Fn(&mut Value) -> bool) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|e| e.unwrap_or_else(|e| panic!("{e}")).path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("nodes-") && n.ends_with(".parquet"))
        })
        .collect();
    files.sort();
    for path in files {
        let batch = read(&path);
        let kinds = strings(&batch, "kind");
        let payloads = strings(&batch, "payload");
        for row in 0..batch.num_rows() {
            if kinds.value(row) != kind {
                continue;
            }
            let mut payload: Value =
                serde_json::from_str(payloads.value(row)).unwrap_or_else(|e| panic!("{e}"));
            if !edit(&mut payload) {
                continue;
            }
            let new: Vec<String> = (0..batch.num_rows())
                .map(|r| {
                    if r == row {
                        payload.to_string()
                    } else {
                        payloads.value(r).to_string()
                    }
                })
                .collect();
            let columns: Vec<ArrayRef> = batch
                .schema()
                .fields()
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    if f.name() == "payload" {
                        Arc::new(StringArray::from(new.clone())) as ArrayRef
                    } else {
                        batch.column(i).clone()
                    }
                })
                .collect();
            let changed =
                RecordBatch::try_new(batch.schema(), columns).unwrap_or_else(|e| panic!("{e}"));
            write(&path, &changed);
            return strings(&batch, "id").value(row).to_string();
        }
    }
    panic!("no stored {kind} payload could be edited")
}
