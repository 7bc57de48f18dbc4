//! Byte spans of every value in a TOML file, by dotted path (`cells.list.0.v`,
//! `configuration.3.prices.input_per_mtok`), for diagnostics that point into the file.
//!
//! Owns: [`SpanIndex`], shared by the manifest and the configuration catalogue loaders.
//! Built on `toml_edit`'s parse tree, which keeps spans under implicit tables too: a file
//! that opens `[[cells.list]]` without a `[cells]` line is valid TOML, and the parent
//! table simply has no span of its own (lookups fall back to the nearest ancestor that
//! has one, or to none), nor has a table made by dotted keys (`configurations.names = …`).
//! A `[table]` or `[[array]]` entry spans its header through its last value, so that a
//! problem with the whole table shows the whole table.
//!
//! Never: interprets values, or reads anything but the text it is given.

use std::collections::BTreeMap;
use std::ops::Range;

use toml_edit::{Item, Table, Value};

/// Byte spans of every value (and every array-of-tables entry) of a TOML text.
#[derive(Debug, Default, Clone)]
pub struct SpanIndex {
    spans: BTreeMap<String, Range<usize>>,
}

/// A TOML syntax error: its message and where it is.
#[derive(Debug, Clone)]
pub struct SyntaxError {
    /// What is wrong.
    pub message: String,
    /// Where in the text, when known.
    pub span: Option<Range<usize>>,
}

impl SpanIndex {
    /// Indexes a file's text. Fails with the TOML syntax error and its span.
    pub fn parse(text: &str) -> Result<SpanIndex, SyntaxError> {
        let doc = toml_edit::Document::parse(text).map_err(|e| SyntaxError {
            message: e.message().trim().to_string(),
            span: e.span(),
        })?;
        let mut index = SpanIndex::default();
        index.table("", doc.as_table());
        Ok(index)
    }

    fn insert(&mut self, path: &str, span: Option<Range<usize>>) {
        if let Some(span) = span {
            self.spans.insert(path.to_string(), span);
        }
    }

    fn table(&mut self, path: &str, table: &Table) {
        for (key, item) in table.iter() {
            let p = join(path, key);
            self.item(&p, item);
        }
    }

    fn item(&mut self, path: &str, item: &Item) {
        match item {
            Item::None => {}
            Item::Value(v) => self.value(path, v),
            Item::Table(t) => {
                self.insert(path, section(t));
                self.table(path, t);
            }
            Item::ArrayOfTables(a) => {
                let entries: Vec<Option<Range<usize>>> = a.iter().map(section).collect();
                if let (Some(Some(first)), Some(Some(last))) = (entries.first(), entries.last()) {
                    self.insert(path, Some(first.start..last.end));
                }
                for (i, (t, span)) in a.iter().zip(entries).enumerate() {
                    let p = join(path, &i.to_string());
                    self.insert(&p, span);
                    self.table(&p, t);
                }
            }
        }
    }

    fn value(&mut self, path: &str, value: &Value) {
        self.insert(path, value.span());
        match value {
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.value(&join(path, &i.to_string()), v);
                }
            }
            Value::InlineTable(t) => {
                for (key, v) in t.iter() {
                    self.value(&join(path, key), v);
                }
            }
            _ => {}
        }
    }

    /// Whether the file itself sets the value at `path` (no ancestor fallback): a key
    /// left out, so that its default applies, is not in the file.
    pub fn contains(&self, path: &str) -> bool {
        self.spans.contains_key(path)
    }

    /// The span of the value at `path`, or of its nearest ancestor in the file.
    pub fn find(&self, path: &str) -> Option<Range<usize>> {
        let mut p = path;
        loop {
            if let Some(span) = self.spans.get(p) {
                return Some(span.clone());
            }
            p = &p[..p.rfind('.')?];
        }
    }
}

/// The span of a `[table]` or `[[array]]` entry: its header through the last value
/// written under it (dotted keys included), as toml_edit before 0.23 gave it and as
/// diagnostics have always shown it; toml_edit now spans the header alone. A table
/// without a header of its own (implicit, or made by dotted keys) has none.
fn section(table: &Table) -> Option<Range<usize>> {
    if table.is_implicit() || table.is_dotted() {
        return None;
    }
    let header = table.span()?;
    let end = last_value_end(table).map_or(header.end, |end| end.max(header.end));
    Some(header.start..end)
}

/// Where the last value written under a table's header ends.
fn last_value_end(table: &Table) -> Option<usize> {
    table
        .iter()
        .filter_map(|(_, item)| match item {
            Item::Value(v) => v.span().map(|s| s.end),
            Item::Table(t) if t.is_dotted() => last_value_end(t),
            _ => None,
        })
        .max()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'t>(text: &'t str, index: &SpanIndex, path: &str) -> &'t str {
        index.find(path).map_or("", |s| &text[s])
    }

    #[test]
    fn values_in_tables_arrays_and_inline_tables_have_spans() {
        let text =
            "repeats = 2\nlanes = [\"routed\", \"fixed\"]\n[budgets]\ncaps = { a = [1, 20] }\n";
        let index = SpanIndex::parse(text).unwrap_or_default();
        assert_eq!(at(text, &index, "repeats"), "2");
        assert_eq!(at(text, &index, "lanes.1"), "\"fixed\"");
        assert_eq!(at(text, &index, "budgets.caps.a.1"), "20");
        assert_eq!(
            at(text, &index, "budgets.caps.a.7"),
            "[1, 20]",
            "falls back to the parent"
        );
    }

    #[test]
    fn an_array_of_tables_without_its_parent_table_line_is_indexed() {
        // Regression: `[[cells.list]]` with no `[cells]` line used to fail as
        // "invalid type: string \"list\"".
        let text = "[[cells.list]]\nv = 8\n[[cells.list]]\nv = 128\n";
        let index = SpanIndex::parse(text).unwrap_or_default();
        assert_eq!(at(text, &index, "cells.list.1.v"), "128");
        assert_eq!(index.find("cells"), None);
    }

    #[test]
    fn a_table_spans_its_header_through_its_last_value() {
        // toml_edit 0.23+ spans a table's header alone; a problem with a whole table
        // (a key it lacks) has always shown the whole table, its dotted keys included.
        let text = "[study]\nname = \"s\" # why\n\n# next\n[[blocks]]\nname = \"a\"\n\
                    configurations.names = [\"x\"]\n[[blocks]]\n[cells.list]\nv = 1\n";
        let index = SpanIndex::parse(text).unwrap_or_default();
        assert_eq!(at(text, &index, "study"), "[study]\nname = \"s\"");
        assert_eq!(
            at(text, &index, "blocks.0"),
            "[[blocks]]\nname = \"a\"\nconfigurations.names = [\"x\"]"
        );
        assert_eq!(at(text, &index, "blocks.1"), "[[blocks]]");
        assert_eq!(
            at(text, &index, "blocks"),
            "[[blocks]]\nname = \"a\"\nconfigurations.names = [\"x\"]\n[[blocks]]"
        );
        // Neither a dotted-key table nor an implicit one has a span of its own.
        assert!(!index.contains("blocks.0.configurations"));
        assert!(!index.contains("cells"));
    }

    #[test]
    fn a_toml_1_1_file_is_indexed_as_toml_reads_it() {
        // Regression: the index was built by an older toml_edit (TOML 1.0) than the
        // `toml` that reads the same files (TOML 1.1), so a manifest or catalogue with
        // an inline table over several lines was read, then refused as invalid TOML.
        let text = "[budgets]\ncaps = {\n  a = [1, 20],\n  b = 3,\n}\n";
        let index = SpanIndex::parse(text);
        assert!(index.is_ok(), "{:?}", index.err());
        let index = index.unwrap_or_default();
        assert_eq!(at(text, &index, "budgets.caps.a.1"), "20");
        assert_eq!(at(text, &index, "budgets.caps.b"), "3");
    }

    #[test]
    fn a_syntax_error_has_a_span() {
        let e = SpanIndex::parse("repeats = = 1").err();
        assert!(e.is_some_and(|e| e.span.is_some()));
    }
}
