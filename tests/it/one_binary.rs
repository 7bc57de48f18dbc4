//! The integration tests stay one binary and none is dropped on the way: the root
//! `Cargo.toml` has `autotests = false`, so a test file added as `tests/<name>.rs` (the
//! usual place, and where a branch cut before the move would put it) is never compiled,
//! and neither is a file in `tests/it/` that `main.rs` does not declare. Both would be
//! tests that silently stop running; this module makes them a failure instead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_test_file_is_in_the_one_binary() {
    let tests = tests_dir();
    let mut files = Vec::new();
    rust_files(&tests, &mut files);
    let outside: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(tests.join("it")))
        .map(|f| f.strip_prefix(&tests).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "test files outside tests/it/ are not compiled (autotests = false): {outside:?}; \
         move each to tests/it/<name>.rs and declare `mod <name>;` in tests/it/main.rs"
    );

    let declared: BTreeSet<&str> = include_str!("main.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let entries = std::fs::read_dir(tests.join("it")).unwrap_or_else(|e| panic!("{e}"));
    let mut modules = BTreeSet::new();
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or("");
        let module_dir = path.is_dir() && path.join("mod.rs").is_file();
        let module_file = path.extension().is_some_and(|x| x == "rs") && name != "main";
        if module_dir || module_file {
            modules.insert(name.to_string());
        }
    }
    let undeclared: Vec<&String> = modules
        .iter()
        .filter(|m| !declared.contains(m.as_str()))
        .collect();
    assert!(
        undeclared.is_empty(),
        "tests/it/ holds modules tests/it/main.rs does not declare, so they never run: \
         {undeclared:?}"
    );
    assert!(
        declared.contains("one_binary") && modules.len() >= 20,
        "read {} modules and declarations {declared:?}",
        modules.len()
    );
}
