//! The repository stands on its own: no tracked file points at a path outside it.
//!
//! Walks the checkout (everything but the git-ignored `target/` and `outputs/` and the
//! `.git` directory) and looks, in every UTF-8 file, for the two ways such a path has
//! leaked before: a sibling directory of the checkout and the development machine's
//! absolute workspace path. Walking the tree rather than asking git keeps the test
//! meaningful in a source tarball too.

use std::fs;
use std::path::{Path, PathBuf};

/// Built from pieces so that this file does not match itself.
fn forbidden() -> [String; 2] {
    [format!("..{}shared", '/'), format!("{}work{}", '/', '/')]
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // In a git worktree `.git` is a file naming the main repository's path.
        if name == ".git" {
            continue;
        }
        if path.is_dir() {
            if !matches!(name, ".git" | "target" | "outputs") {
                files_under(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

#[test]
fn no_file_names_a_path_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    files_under(root, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")),
        "the walk found no README.md under {}",
        root.display()
    );
    let mut leaks = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue; // not UTF-8: a binary file cannot cite a path a reader follows
        };
        for (n, line) in text.lines().enumerate() {
            for needle in forbidden() {
                if line.contains(&needle) {
                    let shown = file.strip_prefix(root).unwrap_or(file);
                    leaks.push(format!("{}:{}: {}", shown.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "files name paths outside the repository (cite `docs/` instead):\n{}",
        leaks.join("\n")
    );
}
