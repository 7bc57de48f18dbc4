//! Tables an analysis reads from another study (`inputs = { truncation = { from =
//! "capacity" } }`): where they are, their content hash (pinned in the lockfile and
//! part of the reading analysis's key), and whether they are missing or stale.
//!
//! A study name maps to two places: its outputs, `<outputs>/<study>/` under the same
//! outputs root as the reading study (the table is `<outputs>/<study>/<table>.parquet`),
//! and its manifest, the one `*.toml` file in the reading manifest's directory whose
//! `[study] name` is that study.
//!
//! An upstream table is *stale* when it no longer matches what its own manifest would
//! produce now: the manifest and lockfile hashes in its provenance metadata differ from
//! those of the upstream manifest as it loads today (without overrides: a table written
//! under `--set` is stale). A fresh table whose hash differs from the lockfile's pin is
//! not an error: the analyses reading it rerun (their key holds the hash) and apply
//! re-pins it; `apply --locked` refuses it as lockfile drift.
//!
//! Never: writes anything, or builds the upstream study's DAG.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::key::hash_hex;
use super::lockfile;
use crate::manifest::Manifest;
use tbb_core::family::FamilySet;
use tbb_harness::Prompts;

/// One table read from another study, as pinned in the lockfile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The upstream study.
    pub study: String,
    /// The table (file stem).
    pub table: String,
    /// blake3 (hex) of the table file; `None` when it is missing.
    pub blake3: Option<String>,
}

impl Pin {
    /// `study/table`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.study, self.table)
    }
}

/// The table file of `study`'s `table` under the outputs root; both names become path
/// components, so both must be identifiers ([`tbb_diag::names::path_under`]).
pub fn table_path(
    outputs: &Path,
    study: &str,
    table: &str,
) -> Result<PathBuf, tbb_diag::names::NotAnIdentifier> {
    let dir = tbb_diag::names::path_under(outputs, study, "")?;
    tbb_diag::names::path_under(&dir, table, ".parquet")
}

/// The tables `manifest`'s analyses read from other studies, each once, sorted, with
/// the current hash of its file.
pub fn pins(manifest: &Manifest, outputs: &Path) -> Vec<Pin> {
    let mut wanted: BTreeMap<(String, String), ()> = BTreeMap::new();
    for a in &manifest.analyses {
        for (table, study) in &a.inputs {
            wanted.insert((study.clone(), table.clone()), ());
        }
    }
    wanted
        .into_keys()
        .map(|(study, table)| {
            let blake3 = table_path(outputs, &study, &table)
                .ok()
                .and_then(|path| std::fs::read(path).ok())
                .map(|bytes| hash_hex(&bytes));
            Pin {
                study,
                table,
                blake3,
            }
        })
        .collect()
}

/// What a plan says about one upstream table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The pin as this apply would write it.
    pub pin: Pin,
    /// The table file.
    pub file: String,
    /// The hash the lockfile on disk pins, if any.
    pub pinned: Option<String>,
    /// The upstream study's manifest, if found.
    pub manifest: Option<String>,
    /// Why apply refuses (missing or stale), if it does.
    pub problem: Option<String>,
    /// The command that fixes the problem.
    pub fix: Option<String>,
}

impl Status {
    /// The plan's line.
    pub fn line(&self) -> String {
        let short = |h: &str| h.chars().take(16).collect::<String>();
        match (&self.problem, &self.pin.blake3) {
            (Some(problem), _) => {
                let fix = self
                    .fix
                    .as_ref()
                    .map(|f| format!("; run `{f}`"))
                    .unwrap_or_default();
                format!("! upstream {}: {problem}{fix}", self.pin.name())
            }
            (None, Some(hash)) => {
                let pinned = match self.pinned.as_deref() {
                    Some(p) if p == hash => "pinned".to_string(),
                    Some(p) => format!(
                        "changed since pinned {}: the analyses reading it rerun and apply re-pins it",
                        short(p)
                    ),
                    None => "pinned by this apply".to_string(),
                };
                format!(
                    "upstream {} ({}): blake3 {}, {pinned}",
                    self.pin.name(),
                    self.file,
                    short(hash)
                )
            }
            (None, None) => format!("! upstream {}: missing", self.pin.name()),
        }
    }
}

/// The manifest in `dir` that declares `[study] name = study` (files in name order;
/// `exclude` is the reading manifest). `Err` names the files when several do.
pub fn find_manifest(dir: &Path, study: &str, exclude: &Path) -> Result<Option<PathBuf>, String> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut files: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let exclude = std::fs::canonicalize(exclude).unwrap_or_else(|_| exclude.to_path_buf());
    let found: Vec<PathBuf> = files
        .into_iter()
        .filter(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()) != exclude)
        .filter(|p| {
            // Bounded, and never a named pipe: a stray one beside the manifests would
            // block every plan.
            tbb_diag::input::read_text(p, tbb_diag::input::MAX_SOURCE_BYTES)
                .ok()
                .and_then(|text| text.parse::<toml::Table>().ok())
                .and_then(|t| {
                    t.get("study")
                        .and_then(|s| s.get("name"))
                        .and_then(|n| n.as_str().map(str::to_string))
                })
                .is_some_and(|name| name == study)
        })
        .collect();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.into_iter().next()),
        _ => Err(format!(
            "several manifests declare study `{study}`: {}",
            found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The pins a lockfile on disk holds, by `study/table`.
pub fn pinned(lockfile: &Path) -> BTreeMap<String, String> {
    #[derive(Deserialize)]
    struct Lock {
        #[serde(default)]
        upstream: Vec<Pin>,
    }
    tbb_diag::input::read_text(lockfile, tbb_diag::input::MAX_DATA_BYTES)
        .ok()
        .and_then(|t| toml::from_str::<Lock>(&t).ok())
        .map(|l| {
            l.upstream
                .into_iter()
                .filter_map(|p| Some((p.name(), p.blake3?)))
                .collect()
        })
        .unwrap_or_default()
}

/// What the reading study knows to check its upstream tables.
pub struct Context<'a> {
    /// The reading manifest.
    pub manifest: &'a Manifest,
    /// The families.
    pub families: &'a FamilySet,
    /// The prompts.
    pub prompts: &'a Prompts,
    /// The paths.
    pub paths: &'a super::Paths,
    /// The pins this apply would write.
    pub pins: &'a [Pin],
}

/// The status of every pin: missing, stale, or fresh (and pinned or changed).
pub fn statuses(cx: &Context<'_>) -> Vec<Status> {
    let dir = cx.manifest.path.parent().unwrap_or(Path::new(""));
    let on_disk = lockfile::path_for(&cx.paths.lockfiles, cx.manifest)
        .map(|path| pinned(&path))
        .unwrap_or_default();
    let default_outputs = Path::new("outputs");
    cx.pins
        .iter()
        .map(|pin| {
            let file = table_path(&cx.paths.outputs, &pin.study, &pin.table);
            let found = find_manifest(dir, &pin.study, &cx.manifest.path);
            let manifest = found.as_ref().ok().and_then(|m| m.clone());
            let fix = manifest.as_ref().map(|m| {
                let outputs = if cx.paths.outputs == default_outputs {
                    String::new()
                } else {
                    format!(" --outputs {}", cx.paths.outputs.display())
                };
                format!("tbb apply {}{outputs}", m.display())
            });
            let problem = match (&file, &found, &pin.blake3) {
                (Err(e), _, _) => Some(e.to_string()),
                (_, Err(why), _) => Some(why.clone()),
                (_, Ok(None), _) => Some(format!(
                    "no manifest in {} declares `[study] name = \"{}\"`",
                    if dir.as_os_str().is_empty() {
                        ".".to_string()
                    } else {
                        dir.display().to_string()
                    },
                    pin.study
                )),
                (Ok(file), Ok(Some(_)), None) => Some(format!("{} is missing", file.display())),
                (Ok(file), Ok(Some(m)), Some(_)) => stale(cx, m, file),
            };
            Status {
                pin: pin.clone(),
                file: file
                    .as_ref()
                    .map(|f| f.display().to_string())
                    .unwrap_or_default(),
                pinned: on_disk.get(&pin.name()).cloned(),
                manifest: manifest.map(|m| m.display().to_string()),
                problem,
                fix,
            }
        })
        .collect()
}

/// `(analysis, problem)` of each analysis that would fail on the other studies'
/// tables it reads (its kind's preflight), checked when every one of those tables is
/// there and fresh; a table that cannot be read is its problem.
pub fn preflight(
    manifest: &Manifest,
    statuses: &[Status],
    outputs: &Path,
) -> Vec<(String, String)> {
    let configurations: std::collections::BTreeSet<String> = manifest
        .configurations
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let mut problems = Vec::new();
    for analysis in manifest.analyses.iter().filter(|a| !a.inputs.is_empty()) {
        let fresh = analysis.inputs.iter().all(|(table, study)| {
            statuses.iter().any(|s| {
                &s.pin.study == study
                    && &s.pin.table == table
                    && s.problem.is_none()
                    && s.pin.blake3.is_some()
            })
        });
        if !fresh {
            continue;
        }
        let mut tables = BTreeMap::new();
        let mut unreadable = None;
        for (table, study) in &analysis.inputs {
            match read_table(outputs, study, table) {
                Ok(batch) => {
                    tables.insert(table.clone(), batch);
                }
                Err(e) => unreadable = Some(e),
            }
        }
        let kind = analysis.kind;
        let problem = unreadable.or_else(|| {
            kind.kind()
                .preflight(&analysis.params, &tables, &configurations)
        });
        if let Some(problem) = problem {
            problems.push((kind.name().to_string(), problem));
        }
    }
    problems
}

/// Another study's table as one record batch.
pub fn read_table(
    outputs: &Path,
    study: &str,
    table: &str,
) -> Result<arrow_array::RecordBatch, String> {
    let path = table_path(outputs, study, table).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    batch_of(&path, bytes)
}

/// The Parquet file `bytes` (read from `path`) as one record batch.
pub fn batch_of(path: &Path, bytes: Vec<u8>) -> Result<arrow_array::RecordBatch, String> {
    let mut reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .map(|b| b.with_batch_size(usize::MAX >> 1))
    .and_then(|b| b.build())
    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match reader.next() {
        Some(batch) => batch.map_err(|e| format!("cannot read {}: {e}", path.display())),
        None => Err(format!("{} has no rows", path.display())),
    }
}

/// Why the table at `file` is not what the manifest at `upstream` would produce now.
fn stale(cx: &Context<'_>, upstream: &Path, file: &Path) -> Option<String> {
    let loaded = match Manifest::load(upstream, cx.families, &[]) {
        Ok(l) => l,
        Err(e) => {
            return Some(format!(
                "its manifest {} does not load: {e}",
                upstream.display()
            ))
        }
    };
    // The episodes its own `--retry-infra` reran are part of its lockfile.
    let retries = lockfile::path_for(&cx.paths.lockfiles, &loaded)
        .map(|path| super::retry::recorded(&path))
        .unwrap_or_default();
    let text = lockfile::render(
        &loaded,
        cx.families,
        cx.prompts,
        &cx.paths.prompts,
        &pins(&loaded, &cx.paths.outputs),
        &retries,
    );
    let lock_hash = hash_hex(text.as_bytes());
    let meta = match tbb_tables::read_metadata(file) {
        Ok(m) => m,
        Err(e) => return Some(format!("{} is unreadable: {e}", file.display())),
    };
    let get = |k: &str| {
        meta.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    if get("tbb.manifest_hash") != loaded.content_hash {
        return Some(format!(
            "stale: {} was written for another manifest than {} now is (manifest hash {} -> {}; edited since, or applied with --set)",
            file.display(),
            upstream.display(),
            short(get("tbb.manifest_hash")),
            short(&loaded.content_hash)
        ));
    }
    if get("tbb.lockfile_hash") != lock_hash {
        return Some(format!(
            "stale: {} was written under another lockfile than {} gives now (its families, prompts, configurations or upstream tables changed)",
            file.display(),
            upstream.display()
        ));
    }
    None
}

fn short(h: &str) -> String {
    if h.is_empty() {
        "none".into()
    } else {
        h.chars().take(16).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(blake3: Option<&str>, pinned: Option<&str>, problem: Option<&str>) -> Status {
        Status {
            pin: Pin {
                study: "capacity".into(),
                table: "truncation".into(),
                blake3: blake3.map(str::to_string),
            },
            file: "outputs/capacity/truncation.parquet".into(),
            pinned: pinned.map(str::to_string),
            manifest: Some("manifests/capacity.toml".into()),
            problem: problem.map(str::to_string),
            fix: Some("tbb apply manifests/capacity.toml".into()),
        }
    }

    #[test]
    fn the_plan_lines_of_an_upstream_table() {
        let a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
        let lines = [
            status(Some(a), None, None),
            status(Some(a), Some(a), None),
            status(Some(b), Some(a), None),
            status(
                None,
                Some(a),
                Some("outputs/capacity/truncation.parquet is missing"),
            ),
            status(Some(b), Some(a), Some("stale: it was written under --set")),
        ]
        .iter()
        .map(Status::line)
        .collect::<Vec<_>>()
        .join("\n");
        insta::assert_snapshot!(lines);
    }

    #[test]
    fn a_study_maps_to_the_one_manifest_beside_that_declares_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).unwrap_or_else(|e| panic!("{e}"));
        };
        write("sweep.toml", "[study]\nname = \"sweep\"\n");
        write("panel.toml", "[study]\nname = \"capacity\"\n");
        write("configurations.toml", "[[configurations]]\nname = \"x\"\n");
        write("broken.toml", "[study\n");
        let me = dir.path().join("sweep.toml");
        let found = find_manifest(dir.path(), "capacity", &me);
        assert_eq!(found, Ok(Some(dir.path().join("panel.toml"))));
        assert_eq!(find_manifest(dir.path(), "sweep", &me), Ok(None));
        write("panel2.toml", "[study]\nname = \"capacity\"\n");
        let twice = find_manifest(dir.path(), "capacity", &me);
        assert!(twice.is_err_and(|e| e.contains("several manifests declare study `capacity`")));
    }
}
