//! `docs/tables.md` is generated from [`super::TABLES`]: this test fails when the file
//! and the row structs disagree, and `TBB_BLESS=1` rewrites it.

use std::fmt::Write as _;
use std::path::PathBuf;

use arrow_schema::DataType;

use super::TABLES;

fn type_name(t: &DataType) -> String {
    match t {
        DataType::Utf8 => "text".into(),
        DataType::Boolean => "bool".into(),
        DataType::Float64 => "f64".into(),
        DataType::UInt32 => "u32".into(),
        DataType::UInt64 => "u64".into(),
        DataType::Int32 => "i32".into(),
        DataType::Int64 => "i64".into(),
        DataType::UInt16 => "u16".into(),
        DataType::UInt8 => "u8".into(),
        DataType::List(item) => format!("list of {}", type_name(item.data_type())),
        other => other.to_string(),
    }
}

fn generated() -> String {
    let mut out = String::from(
        "# Table columns\n\n\
         Generated from the row structs in `crates/tables/src/rows.rs` (`variants`, \
         `episodes`, `requests`) and `crates/tables/src/analyses/` (the analyses' \
         tables), one per table; what each column means is documented on its field \
         there and in `docs/architecture.md`'s table contract. `episodes` has one more \
         column, `attempt` (u32), last, only when some episode was retried \
         (`tbb apply --retry-infra`). Regenerate with \
         `TBB_BLESS=1 cargo test -p tbb-tables docs_tables`; the test fails while this \
         file and the structs disagree.\n",
    );
    for (name, layout) in TABLES {
        let fields = layout().unwrap_or_else(|e| panic!("{name}: {e}"));
        let _ = write!(
            out,
            "\n## `{name}`\n\n| column | type | null |\n|---|---|---|\n"
        );
        for f in fields {
            let null = if f.is_nullable() { "yes" } else { "" };
            let _ = writeln!(
                out,
                "| {} | {} | {null} |",
                f.name(),
                type_name(f.data_type())
            );
        }
    }
    out
}

#[test]
fn docs_tables_lists_every_row_structs_columns() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/tables.md");
    let want = generated();
    if std::env::var_os("TBB_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/tables.md does not list the row structs' columns; regenerate it with \
         `TBB_BLESS=1 cargo test -p tbb-tables docs_tables`"
    );
}

#[test]
fn every_table_is_listed_once() {
    let mut names: Vec<&str> = TABLES.iter().map(|(n, _)| *n).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "a table is listed twice in TABLES");
}
