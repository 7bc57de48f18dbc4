//! Typed, checked access to the columns of an analysis table.
//!
//! Owns: turning a column of a [`RecordBatch`] into a `Vec` of plain values, and the
//! error that names the table and column when the column is missing or of an
//! unexpected type.
//!
//! Invariants: integer columns accept any unsigned or signed Arrow integer type and
//! floating columns accept `Float32` or `Float64`, so a table read back by another
//! tool (which may widen types) still renders. A null float reads as NaN (shown as
//! "—"); a null text or integer is an error, because every column the report reads
//! is non-null in the tables the analyses write.
//!
//! Never: interprets values; the section builders decide what a value means.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;

use super::ReportError;

/// One named analysis table.
#[derive(Clone, Copy)]
pub(crate) struct Columns<'a> {
    table: &'a str,
    batch: &'a RecordBatch,
}

impl<'a> Columns<'a> {
    /// Wraps `batch`, the table called `table` (for error messages).
    pub(crate) fn new(table: &'a str, batch: &'a RecordBatch) -> Columns<'a> {
        Columns { table, batch }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.batch.num_rows()
    }

    fn column(&self, column: &str) -> Result<&'a ArrayRef, ReportError> {
        self.batch
            .column_by_name(column)
            .ok_or_else(|| ReportError::MissingColumn {
                table: self.table.to_string(),
                column: column.to_string(),
            })
    }

    fn wrong_type(&self, column: &str, expected: &'static str, found: &DataType) -> ReportError {
        ReportError::ColumnType {
            table: self.table.to_string(),
            column: column.to_string(),
            expected,
            found: found.to_string(),
        }
    }

    fn null(&self, column: &str, row: usize) -> ReportError {
        ReportError::NullValue {
            table: self.table.to_string(),
            column: column.to_string(),
            row,
        }
    }

    /// A text column.
    pub(crate) fn text(&self, column: &str) -> Result<Vec<String>, ReportError> {
        let array = self.column(column)?;
        let values: Vec<Option<&str>> = match array.data_type() {
            DataType::Utf8 => array.as_string::<i32>().iter().collect(),
            DataType::LargeUtf8 => array.as_string::<i64>().iter().collect(),
            DataType::Utf8View => array.as_string_view().iter().collect(),
            other => return Err(self.wrong_type(column, "text", other)),
        };
        values
            .into_iter()
            .enumerate()
            .map(|(row, v)| v.map(str::to_string).ok_or_else(|| self.null(column, row)))
            .collect()
    }

    /// A text column whose nulls mean "none".
    pub(crate) fn text_opt(&self, column: &str) -> Result<Vec<Option<String>>, ReportError> {
        let array = self.column(column)?;
        match array.data_type() {
            DataType::Utf8 => Ok(array
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect()),
            other => Err(self.wrong_type(column, "text", other)),
        }
    }

    /// An unsigned 32- or 64-bit column whose nulls mean "none".
    pub(crate) fn int_opt(&self, column: &str) -> Result<Vec<Option<u64>>, ReportError> {
        let array = self.column(column)?;
        match array.data_type() {
            DataType::UInt32 => Ok(array
                .as_primitive::<UInt32Type>()
                .iter()
                .map(|v| v.map(u64::from))
                .collect()),
            DataType::UInt64 => Ok(array.as_primitive::<UInt64Type>().iter().collect()),
            other => Err(self.wrong_type(column, "an integer", other)),
        }
    }

    /// A boolean column whose nulls mean "not said".
    pub(crate) fn flag_opt(&self, column: &str) -> Result<Vec<Option<bool>>, ReportError> {
        let array = self.column(column)?;
        match array.data_type() {
            DataType::Boolean => Ok(array.as_boolean().iter().collect()),
            other => Err(self.wrong_type(column, "a boolean", other)),
        }
    }

    /// An integer column, as `u64` (negative values are an error: no count or cap
    /// the report reads can be negative).
    pub(crate) fn int(&self, column: &str) -> Result<Vec<u64>, ReportError> {
        let array = self.column(column)?;
        let values: Vec<Option<i128>> = match array.data_type() {
            DataType::UInt32 => collect(array.as_primitive::<UInt32Type>().iter()),
            DataType::UInt64 => collect(array.as_primitive::<UInt64Type>().iter()),
            DataType::Int32 => collect(array.as_primitive::<Int32Type>().iter()),
            DataType::Int64 => collect(array.as_primitive::<Int64Type>().iter()),
            other => return Err(self.wrong_type(column, "an integer", other)),
        };
        values
            .into_iter()
            .enumerate()
            .map(|(row, v)| {
                v.and_then(|v| u64::try_from(v).ok())
                    .ok_or_else(|| self.null(column, row))
            })
            .collect()
    }

    /// A floating-point column; nulls read as NaN.
    pub(crate) fn float(&self, column: &str) -> Result<Vec<f64>, ReportError> {
        let array = self.column(column)?;
        let values: Vec<f64> = match array.data_type() {
            DataType::Float64 => array
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.unwrap_or(f64::NAN))
                .collect(),
            DataType::Float32 => array
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.map_or(f64::NAN, f64::from))
                .collect(),
            other => return Err(self.wrong_type(column, "a float", other)),
        };
        Ok(values)
    }
}

fn collect<T: Into<i128>>(values: impl Iterator<Item = Option<T>>) -> Vec<Option<i128>> {
    values.map(|v| v.map(Into::into)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbb_tables::TableBuilder;

    #[test]
    fn missing_and_mistyped_columns_name_the_table() {
        let batch = TableBuilder::new()
            .text("lane", ["routed"])
            .u32("pairs", [3])
            .build("t")
            .unwrap_or_else(|e| panic!("{e}"));
        let t = Columns::new("strata", &batch);
        assert_eq!(t.int("pairs").ok(), Some(vec![3]));
        assert_eq!(
            t.float("pairs").err().map(|e| e.to_string()),
            Some("the strata table's column pairs is UInt32, the report expects a float".into())
        );
        assert_eq!(
            t.text("scope").err().map(|e| e.to_string()),
            Some("the strata table has no column scope".into())
        );
    }
}
