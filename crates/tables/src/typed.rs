//! Typed rows: one serde struct per published table, shared by the code that writes
//! the table, every reader of it and the documentation's column list.
//!
//! Owns: the [`TableRow`] trait, the Arrow layout a row struct derives (field order =
//! column order; `Option<_>` = nullable; `String` = `Utf8`, `u32`/`u64`/`f64`/`bool` =
//! their Arrow types), and turning rows into a batch and a batch back into rows.
//!
//! Why `serde_arrow` rather than hand-written builders: the column names were written
//! twice (once by the writer, once by each reader) and a renamed column compiled and
//! failed when the report rendered. Deriving both directions from one struct makes a
//! rename a compile error. The tracing options below are chosen so that a derived
//! layout is the layout [`crate::TableBuilder`] wrote (`Utf8`, not `LargeUtf8`; no
//! dictionary arrays), which keeps every published byte unchanged.
//!
//! Never: decides what goes into a row (the analyses and the pipeline do) or touches
//! the file system.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_arrow::schema::{SchemaLike, TracingOptions};

use crate::levels::Menu;
use crate::StoreError;

/// Rows serialised as a sequence of their conversions, each made as it is written.
struct Converted<'a, R, F> {
    rows: &'a [R],
    convert: F,
}

impl<R, T: Serialize, F: Fn(&R) -> T> Serialize for Converted<'_, R, F> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.rows.len()))?;
        for row in self.rows {
            seq.serialize_element(&(self.convert)(row))?;
        }
        seq.end()
    }
}

/// A row of one published table.
pub trait TableRow: Serialize + DeserializeOwned {
    /// The table's name (its file stem, `outputs/<study>/<TABLE>.parquet`).
    const TABLE: &'static str;

    /// The table's columns, in order. A row that flattens column groups
    /// (`#[serde(flatten)]`) writes this out as its groups' [`columns_of`] in order:
    /// serde_arrow cannot trace a flattened struct from its type.
    fn fields() -> Result<Vec<FieldRef>, StoreError> {
        columns_of::<Self>(Self::TABLE)
    }

    /// The rows as one batch.
    fn to_batch(rows: &[Self]) -> Result<RecordBatch, StoreError>
    where
        Self: Sized,
    {
        let fields = Self::fields()?;
        if rows.is_empty() {
            // serde_arrow builds no batch from no items; an empty table still has columns.
            return Ok(RecordBatch::new_empty(Arc::new(Schema::new(fields))));
        }
        serde_arrow::to_record_batch(&fields, &rows).map_err(|e| arrow_error(Self::TABLE, e))
    }

    /// The batch of `rows` of another type, each made a row of this table by `convert`
    /// as it is written: the converted rows are never all held at once (a row group of
    /// episodes held 55 MB of copies beside the rows it was copied from).
    fn to_batch_converted<R>(
        rows: &[R],
        convert: impl Fn(&R) -> Self,
    ) -> Result<RecordBatch, StoreError>
    where
        Self: Sized,
    {
        let fields = Self::fields()?;
        if rows.is_empty() {
            return Ok(RecordBatch::new_empty(Arc::new(Schema::new(fields))));
        }
        let converted = Converted { rows, convert };
        serde_arrow::to_record_batch(&fields, &converted).map_err(|e| arrow_error(Self::TABLE, e))
    }

    /// The rows of a batch of this table (a batch of another layout is an error naming
    /// the column that does not fit).
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>, StoreError>
    where
        Self: Sized,
    {
        read_rows(Self::TABLE, batch)
    }

    /// The rows of several batches of this table, in order.
    fn from_batches(batches: &[RecordBatch]) -> Result<Vec<Self>, StoreError>
    where
        Self: Sized,
    {
        let mut rows = Vec::new();
        for batch in batches {
            rows.extend(Self::from_batch(batch)?);
        }
        Ok(rows)
    }

    /// The table's column names, in order (the documentation's column lists are tested
    /// against these).
    fn column_names() -> Result<Vec<String>, StoreError> {
        Ok(Self::fields()?.iter().map(|f| f.name().clone()).collect())
    }
}

/// The columns of the struct `T`, in order: a whole row's, or a group of columns that
/// several rows flatten (`table` names the table in errors).
pub fn columns_of<T: Serialize + DeserializeOwned>(
    table: &str,
) -> Result<Vec<FieldRef>, StoreError> {
    let traced = Vec::<FieldRef>::from_type::<T>(options()).map_err(|e| arrow_error(table, e))?;
    Ok(traced.into_iter().map(levels_as_text).collect())
}

/// The rows of a batch of `table` as `R`, a struct of some of the table's columns
/// (named as the table names them; the batch's other columns are not read): how a
/// reader that needs a few columns of a table whose row struct lives elsewhere reads
/// it. A batch without one of `R`'s columns is an error naming the column — except
/// for an `Option` field, which serde reads as `None` when its column is absent
/// unless the field says `#[serde(deserialize_with = "Option::deserialize")]`.
pub fn read_rows<R: DeserializeOwned>(
    table: &str,
    batch: &RecordBatch,
) -> Result<Vec<R>, StoreError> {
    serde_arrow::from_record_batch(batch).map_err(|e| StoreError::Layout {
        table: table.to_string(),
        detail: e.to_string(),
    })
}

/// The one set of tracing options every table is derived with. Tracing a level takes
/// one pass over the row per name (serde_arrow completes one variant a pass): the budget
/// of passes covers the level with the most names, the lane ([`Menu::row_names`]).
fn options() -> TracingOptions {
    TracingOptions::default()
        .strings_as_large_utf8(false)
        .sequence_as_large_list(false)
        .enums_without_data_as_strings(true)
        .from_type_budget(Menu::row_names().len() + 100)
}

/// A level (an enum of unit variants whose serde names are its published names) is
/// traced as a dictionary of its names; published tables hold it as plain text, which
/// serde_arrow writes from a unit variant and reads back into one.
fn levels_as_text(field: FieldRef) -> FieldRef {
    match field.data_type() {
        DataType::Dictionary(_, value) if value.as_ref() == &DataType::Utf8 => Arc::new(
            Field::new(field.name(), DataType::Utf8, field.is_nullable())
                .with_metadata(field.metadata().clone()),
        ),
        _ => field,
    }
}

fn arrow_error(table: &str, e: serde_arrow::Error) -> StoreError {
    StoreError::Arrow {
        table: table.to_string(),
        source: ArrowError::ExternalError(Box::new(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TableBuilder;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Sample {
        name: String,
        note: Option<String>,
        count: u32,
        total: u64,
        missing: Option<u32>,
        share: f64,
        maybe_share: Option<f64>,
        ok: bool,
        maybe_ok: Option<bool>,
    }

    impl TableRow for Sample {
        const TABLE: &'static str = "sample";
    }

    fn rows() -> Vec<Sample> {
        vec![
            Sample {
                name: "a".into(),
                note: None,
                count: 1,
                total: 2,
                missing: Some(3),
                share: 0.5,
                maybe_share: None,
                ok: true,
                maybe_ok: Some(false),
            },
            Sample {
                name: "b".into(),
                note: Some("n".into()),
                count: 4,
                total: u64::MAX,
                missing: None,
                share: f64::NAN,
                maybe_share: Some(0.25),
                ok: false,
                maybe_ok: None,
            },
        ]
    }

    /// The derived layout is the hand-built one, column for column: the guarantee that
    /// moving a table to a row struct leaves its published bytes unchanged.
    #[test]
    fn a_derived_batch_is_the_hand_built_batch() {
        let rows = rows();
        let derived = Sample::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
        let built = TableBuilder::new()
            .text("name", rows.iter().map(|r| &r.name))
            .text_opt("note", rows.iter().map(|r| r.note.as_ref()))
            .u32("count", rows.iter().map(|r| r.count))
            .u64("total", rows.iter().map(|r| r.total))
            .u32_opt("missing", rows.iter().map(|r| r.missing))
            .f64("share", rows.iter().map(|r| r.share))
            .f64_opt("maybe_share", rows.iter().map(|r| r.maybe_share))
            .bool("ok", rows.iter().map(|r| r.ok))
            .bool_opt("maybe_ok", rows.iter().map(|r| r.maybe_ok))
            .build("sample")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(derived.schema(), built.schema());
        for (d, b) in derived.columns().iter().zip(built.columns()) {
            assert_eq!(d.to_data(), b.to_data());
        }
    }

    #[test]
    fn rows_survive_a_batch() {
        let rows = rows();
        let batch = Sample::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
        let back = Sample::from_batch(&batch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back[0], rows[0]);
        assert_eq!(back[1].name, "b");
        assert!(back[1].share.is_nan());
    }

    #[test]
    fn an_empty_table_keeps_its_columns() {
        let batch = Sample::to_batch(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(batch.num_rows(), 0);
        assert_eq!(
            Sample::column_names().unwrap_or_else(|e| panic!("{e}")),
            [
                "name",
                "note",
                "count",
                "total",
                "missing",
                "share",
                "maybe_share",
                "ok",
                "maybe_ok"
            ]
        );
    }

    #[test]
    fn a_batch_of_another_layout_names_the_column() {
        let other = TableBuilder::new()
            .text("name", ["a"])
            .build("other")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Sample::from_batch(&other)
            .err()
            .unwrap_or_else(|| panic!("read a batch without its columns"));
        assert!(err.to_string().contains("sample"), "{err}");
    }

    /// Two of `Sample`'s columns, the second required although nullable.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Part {
        name: String,
        #[serde(deserialize_with = "Option::deserialize")]
        maybe_share: Option<f64>,
    }

    #[test]
    fn a_struct_of_some_columns_reads_a_batch_with_more() {
        let batch = Sample::to_batch(&rows()).unwrap_or_else(|e| panic!("{e}"));
        let part: Vec<Part> = read_rows("sample", &batch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            part,
            [
                Part {
                    name: "a".into(),
                    maybe_share: None
                },
                Part {
                    name: "b".into(),
                    maybe_share: Some(0.25)
                }
            ]
        );
        let without = TableBuilder::new()
            .text("name", ["a"])
            .build("sample")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = read_rows::<Part>("sample", &without)
            .err()
            .unwrap_or_else(|| panic!("read a batch without maybe_share"));
        assert!(err.to_string().contains("maybe_share"), "{err}");
    }

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Lane {
        Routed,
        Fixed,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct WithLevel {
        lane: Lane,
        maybe_lane: Option<Lane>,
    }

    impl TableRow for WithLevel {
        const TABLE: &'static str = "with_level";
    }

    #[test]
    fn a_level_is_a_text_column_of_its_names() {
        let rows = [
            WithLevel {
                lane: Lane::Routed,
                maybe_lane: None,
            },
            WithLevel {
                lane: Lane::Fixed,
                maybe_lane: Some(Lane::Routed),
            },
        ];
        let batch = WithLevel::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
        let built = TableBuilder::new()
            .text("lane", ["routed", "fixed"])
            .text_opt("maybe_lane", [None, Some("routed")])
            .build("with_level")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(batch.schema(), built.schema());
        for (d, b) in batch.columns().iter().zip(built.columns()) {
            assert_eq!(d.to_data(), b.to_data());
        }
        let back = WithLevel::from_batch(&batch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, rows);
    }
}
