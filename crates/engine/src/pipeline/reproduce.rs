//! Reproduction: every published table of a study recomputed from its stored episode
//! rows in a scratch directory and compared with the published one.
//!
//! The rows are the ones apply publishes and analyses: each grade node's stored row, in
//! DAG order, placed in the design ([`super::apply::place_in_design`]). Each analysis
//! node runs again through the one entry point apply uses ([`run_analysis`]), the
//! report after the analyses it reads; `episodes.parquet` is rebuilt from the rows and
//! `variants.parquet` from a fresh compilation. Each table is written into the scratch
//! directory with the provenance its table node writes, then compared with the
//! published file:
//!
//! - **typed**: the same columns (names, types, nullability), the same number of rows,
//!   and every cell equal (floats bit for bit); the first difference is named by
//!   column and row;
//! - **bytes**: every table tbb publishes is deterministic — an analysis is a pure
//!   function of the rows and its seed, the Parquet writer records no clock or host,
//!   and the one clock column, `wall_ms` of `episodes.parquet`, is read from the stored
//!   rows, not measured again — so each file must be byte-identical too. A table
//!   whose typed fields agree but whose bytes do not (written by another tbb version,
//!   say: the version is in the file) fails and says so;
//! - the report's text files (`report.md`, `report.html`, figure SVGs, and the pages
//!   of the episodes it links to, rendered again from their transcripts) are compared
//!   byte for byte, short of the `tbb.node_key` comment publication appends.
//!
//! Owns: the scratch directory `outputs/<study>/reproduce/` (emptied at each run, and
//! left behind for inspection), the comparison and its summary.
//!
//! Never: writes a published table or the study's cache, runs an episode, or reads a
//! clock into a result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::DataType;
use petgraph::graph::NodeIndex;
use thiserror::Error;

use super::apply::place_in_design;
use super::cache::{Cache, CacheError};
use super::dag::{Publish, Work};
use super::key::NodeKind;
use super::publish::{Outcome, Outcomes};
use super::request_spill::RequestRows;
use super::Study;
use tbb_core::compile::{compile, Variant};
use tbb_tables::rows::{EpisodeRow, RequestRow, VariantRow};
use tbb_tables::{write_table, Name, Provenance, ScenarioEpisodeRow, TableRow};

/// The scratch directory under `outputs/<study>/`.
pub const SCRATCH: &str = "reproduce";

/// Why reproduction could not run (a table that differs is a result, not this).
#[derive(Debug, Error, miette::Diagnostic)]
pub enum ReproduceError {
    /// No stored row of the study.
    #[error(
        "study `{study}` has not been applied: its cache holds none of its {total} episode rows"
    )]
    #[diagnostic(
        code(tbb::reproduce::not_applied),
        help("run `tbb apply {manifest}` first (with the same --outputs), then reproduce")
    )]
    NotApplied {
        /// The study.
        study: String,
        /// Its manifest.
        manifest: String,
        /// Rows it has.
        total: usize,
    },
    /// Some stored rows are missing.
    #[error("the cache of study `{study}` is incomplete: {missing} of its {total} episode rows are not in it (the first: {first})")]
    #[diagnostic(
        code(tbb::reproduce::incomplete),
        help(
            "`tbb plan {manifest}` shows what is missing and why; `tbb apply {manifest}` runs it"
        )
    )]
    Incomplete {
        /// The study.
        study: String,
        /// Its manifest.
        manifest: String,
        /// Rows missing.
        missing: usize,
        /// Rows in all.
        total: usize,
        /// The first missing grade node.
        first: String,
    },
    /// The scratch directory cannot be prepared.
    #[error("cannot prepare the scratch directory {}: {source}", path.display())]
    #[diagnostic(code(tbb::reproduce::scratch))]
    Scratch {
        /// The directory.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The cache cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] CacheError),
    /// Some tables do not reproduce: the command's verdict.
    #[error("{failed} of {checked} published files do not reproduce from the stored rows; the first: {first}")]
    #[diagnostic(
        code(tbb::reproduce::failed),
        help("the recomputed files are in the scratch directory the summary names, to compare")
    )]
    Failed {
        /// Files that differ.
        failed: usize,
        /// Files checked.
        checked: usize,
        /// The first, as text.
        first: String,
    },
}

/// The check of one published file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCheck {
    /// File name under `outputs/<study>/`.
    pub file: String,
    /// Rows (tables) — `None` for text files.
    pub rows: Option<usize>,
    /// The first typed difference (tables), or why the file could not be compared.
    pub difference: Option<String>,
    /// Whether the recomputed file is byte-identical to the published one (text files:
    /// short of the node-key comment).
    pub bytes_identical: bool,
}

impl FileCheck {
    /// Typed fields and bytes agree.
    pub fn passed(&self) -> bool {
        self.difference.is_none() && self.bytes_identical
    }

    /// One line: the file and what differs.
    pub fn line(&self) -> String {
        match (&self.difference, self.bytes_identical) {
            (Some(d), _) => format!("{}: {d}", self.file),
            (None, false) => format!(
                "{}: every typed field agrees, but the bytes differ (another tbb version or writer setting?)",
                self.file
            ),
            (None, true) => format!("{}: reproduced", self.file),
        }
    }
}

/// Every file checked, in DAG order.
#[derive(Debug, Clone, Default)]
pub struct Reproduction {
    /// The checks.
    pub files: Vec<FileCheck>,
    /// Where the recomputed files are.
    pub scratch: PathBuf,
}

impl Reproduction {
    /// Files that failed.
    pub fn failures(&self) -> impl Iterator<Item = &FileCheck> {
        self.files.iter().filter(|f| !f.passed())
    }

    /// The verdict as an error when some file failed.
    pub fn verdict(&self) -> Result<(), ReproduceError> {
        match self.failures().next() {
            None => Ok(()),
            Some(first) => Err(ReproduceError::Failed {
                failed: self.failures().count(),
                checked: self.files.len(),
                first: first.line(),
            }),
        }
    }
}

/// Runs analysis node `node` as apply does, returning what apply would commit. The one
/// call into the analyses: when their entry point changes, this line does. Its tables
/// go to `scratch`; request rows are read from the study's `cache` (its transcripts).
fn run_analysis(
    outcomes: &mut Outcomes,
    study: &Study,
    (cache, scratch): (&Cache, &Cache),
    node: NodeIndex,
    (rows, requests): (&[EpisodeRow], &mut RequestRows),
    variants: &HashMap<NodeIndex, Arc<Variant>>,
) -> Result<String, String> {
    outcomes
        .run(study, scratch, node, rows, variants, &mut || {
            requests.get(study, cache, variants, rows)
        })
        .map_err(|e| e.to_string())
}

/// Every request row at once: a reproduction compares the table as one batch.
fn all_requests(
    requests: &mut RequestRows,
    study: &Study,
    cache: &Cache,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    rows: &[EpisodeRow],
) -> Result<Vec<RequestRow>, String> {
    let spill = requests
        .get(study, cache, variants, rows)
        .map_err(|e| e.to_string())?;
    let mut all = Vec::new();
    spill
        .for_each(rows, &mut |row| {
            all.push(row);
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    Ok(all)
}

/// The study's stored rows, as apply hands them to the analyses and to
/// `episodes.parquet`.
pub fn stored_rows(study: &Study, cache: &Cache) -> Result<Vec<EpisodeRow>, ReproduceError> {
    let dag = &study.dag;
    let grades: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Grade)
        .map(|(i, _)| i)
        .collect();
    let mut parsed = super::rows::stored_rows::<EpisodeRow>(cache, dag, grades.iter().copied())?;
    let mut rows = Vec::with_capacity(grades.len());
    let mut missing = Vec::new();
    for &g in &grades {
        match parsed.remove(&g).and_then(Result::ok) {
            Some(mut row) => {
                row.study = Name::new(&study.manifest.study);
                if let Work::Grade { execute, .. } = dag.graph[g].work {
                    place_in_design(&mut row, &study.manifest, &dag.graph[execute].work);
                }
                rows.push(row);
            }
            None => missing.push(g),
        }
    }
    let manifest = study.manifest.path.display().to_string();
    if !grades.is_empty() && missing.len() == grades.len() {
        return Err(ReproduceError::NotApplied {
            study: study.manifest.study.clone(),
            manifest,
            total: grades.len(),
        });
    }
    if let Some(&first) = missing.first() {
        return Err(ReproduceError::Incomplete {
            study: study.manifest.study.clone(),
            manifest,
            missing: missing.len(),
            total: grades.len(),
            first: dag.graph[first].id(),
        });
    }
    Ok(rows)
}

/// Recomputes every published file of the study into `outputs/<study>/reproduce/` and
/// compares it with the published one.
pub fn reproduce(study: &Study, cache: &Cache) -> Result<Reproduction, ReproduceError> {
    let rows = stored_rows(study, cache)?;
    let dag = &study.dag;
    let outputs = study.outputs();
    let scratch = outputs.join(SCRATCH);
    let io = |source| ReproduceError::Scratch {
        path: scratch.clone(),
        source,
    };
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(io)?;
    }
    std::fs::create_dir_all(&scratch).map_err(io)?;
    // Analyses that keep their tables in a cache keep them in a scratch one.
    let scratch_cache = Cache::open(&scratch.join("cache"))?;

    let mut variants: HashMap<NodeIndex, Arc<Variant>> = HashMap::new();
    let mut compile_failures: Vec<String> = Vec::new();
    for (i, n) in dag.nodes() {
        if let Work::Compile { family, cell } = &n.work {
            match compile(&study.families.families[*family], cell) {
                Ok(v) => {
                    variants.insert(i, Arc::new(v));
                }
                Err(e) => compile_failures.push(format!("{}: {e}", n.id())),
            }
        }
    }

    let (scenario_rows, missing) = super::scenarios::rows(dag, cache, HashMap::new())?;
    if let Some(&first) = missing.first() {
        return Err(ReproduceError::Incomplete {
            study: study.manifest.study.clone(),
            manifest: study.manifest.path.display().to_string(),
            missing: missing.len(),
            total: missing.len() + scenario_rows.len(),
            first: dag.graph[first].id(),
        });
    }
    let mut outcomes = Outcomes::with_scenarios(scenario_rows);
    // Read again from the stored transcripts (never from the records apply stores
    // beside them, so that the published table is checked against the transcripts
    // themselves); shared by the analyses that read them and the requests table.
    let mut requests = RequestRows::from_transcripts();
    let mut failed_analyses: HashMap<NodeIndex, String> = HashMap::new();
    for (i, n) in dag.nodes() {
        if n.kind == NodeKind::Analysis {
            if let Err(e) = run_analysis(
                &mut outcomes,
                study,
                (cache, &scratch_cache),
                i,
                (&rows, &mut requests),
                &variants,
            ) {
                failed_analyses.insert(i, e);
            }
        }
    }

    let mut files = Vec::new();
    for (_, n) in dag.nodes() {
        let Work::Table(what) = n.work else { continue };
        let provenance = Provenance {
            manifest_hash: study.manifest.content_hash.clone(),
            lockfile_hash: study.lockfile_hash.clone(),
            node_key: n.key.to_string(),
        };
        let outcome: Result<Arc<Outcome>, String> = match what {
            Publish::Variants => {
                if let Some(first) = compile_failures.first() {
                    Err(format!("a variant does not compile: {first}"))
                } else {
                    let list: Vec<&Variant> = dag
                        .nodes()
                        .filter_map(|(i, n)| match n.work {
                            Work::Compile { .. } => variants.get(&i).map(|v| v.as_ref()),
                            _ => None,
                        })
                        .collect();
                    tbb_tables::rows::variants(&list)
                        .map(|b| {
                            Arc::new(Outcome {
                                tables: vec![(VariantRow::TABLE.into(), b)],
                                files: Vec::new(),
                                episodes: Vec::new(),
                            })
                        })
                        .map_err(|e| e.to_string())
                }
            }
            Publish::Episodes => tbb_tables::rows::episodes(&rows)
                .map(|b| {
                    Arc::new(Outcome {
                        tables: vec![(EpisodeRow::TABLE.into(), b)],
                        files: Vec::new(),
                        episodes: Vec::new(),
                    })
                })
                .map_err(|e| e.to_string()),
            Publish::Requests => all_requests(&mut requests, study, cache, &variants, &rows)
                .and_then(|r| tbb_tables::rows::requests(&r).map_err(|e| e.to_string()))
                .map(|b| {
                    Arc::new(Outcome {
                        tables: vec![(RequestRow::TABLE.into(), b)],
                        files: Vec::new(),
                        episodes: Vec::new(),
                    })
                }),
            Publish::ScenarioEpisodes => ScenarioEpisodeRow::to_batch(outcomes.scenario_rows())
                .map(|b| {
                    Arc::new(Outcome {
                        tables: vec![(ScenarioEpisodeRow::TABLE.into(), b)],
                        files: Vec::new(),
                        episodes: Vec::new(),
                    })
                })
                .map_err(|e| e.to_string()),
            Publish::ScenarioRequests => {
                super::scenarios::request_rows(cache, outcomes.scenario_rows())
                    .map_err(|e| e.to_string())
                    .and_then(|requests| {
                        tbb_tables::scenarios::ScenarioRequestRow::to_batch(&requests)
                            .map_err(|e| e.to_string())
                    })
                    .map(|b| {
                        Arc::new(Outcome {
                            tables: vec![(
                                tbb_tables::scenarios::ScenarioRequestRow::TABLE.into(),
                                b,
                            )],
                            files: Vec::new(),
                            episodes: Vec::new(),
                        })
                    })
            }
            Publish::Analysis(a) => match failed_analyses.get(&a) {
                Some(e) => Err(format!("{} does not run again: {e}", dag.graph[a].id())),
                None => outcomes
                    .get(study, &scratch_cache, a)
                    .map_err(|e| e.to_string()),
            },
        };
        match outcome {
            Ok(outcome) => {
                for (name, batch) in &outcome.tables {
                    files.push(check_table(&outputs, &scratch, name, batch, &provenance));
                }
                for (name, text) in &outcome.files {
                    files.push(check_text(&outputs, &scratch, name, text));
                }
                if let Publish::Analysis(a) = what {
                    if super::publish::is_report(study, a) {
                        let index = super::publish::episode_index(study, &rows, &outcome);
                        files.push(check_text(
                            &outputs,
                            &scratch,
                            tbb_report::index::FILE,
                            &index,
                        ));
                    }
                }
                // The episode pages the report links to, rendered again from the
                // transcripts.
                if !outcome.episodes.is_empty() {
                    match crate::show::pages(study, cache, &variants, &outcome.episodes) {
                        Ok(pages) => {
                            for (name, text) in &pages {
                                files.push(check_text(&outputs, &scratch, name, text));
                            }
                        }
                        Err(e) => files.push(FileCheck {
                            file: n.id(),
                            rows: None,
                            difference: Some(format!("its episode pages: {e}")),
                            bytes_identical: false,
                        }),
                    }
                }
            }
            Err(e) => files.push(FileCheck {
                file: n.id(),
                rows: None,
                difference: Some(e),
                bytes_identical: false,
            }),
        }
    }
    Ok(Reproduction { files, scratch })
}

fn check_table(
    outputs: &Path,
    scratch: &Path,
    name: &str,
    batch: &RecordBatch,
    provenance: &Provenance,
) -> FileCheck {
    let file = format!("{name}.parquet");
    let mut check = FileCheck {
        file: file.clone(),
        rows: Some(batch.num_rows()),
        difference: None,
        bytes_identical: false,
    };
    let fresh = scratch.join(&file);
    if let Err(e) = write_table(&fresh, batch, provenance) {
        check.difference = Some(format!("cannot write the recomputed table: {e}"));
        return check;
    }
    let published = outputs.join(&file);
    let recomputed = match read_one(&fresh) {
        Ok(b) => b,
        Err(e) => {
            check.difference = Some(format!("cannot read the recomputed table back: {e}"));
            return check;
        }
    };
    match read_one(&published) {
        Ok(old) => check.difference = first_difference(&old, &recomputed),
        Err(e) => {
            check.difference = Some(format!(
                "the published table cannot be read ({e}); `tbb apply` publishes it again"
            ));
            return check;
        }
    }
    check.bytes_identical = match (std::fs::read(&published), std::fs::read(&fresh)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    check
}

fn check_text(outputs: &Path, scratch: &Path, name: &str, text: &str) -> FileCheck {
    let mut check = FileCheck {
        file: name.to_string(),
        rows: None,
        difference: None,
        bytes_identical: false,
    };
    if let Err(e) = tbb_tables::write_text(&scratch.join(name), text) {
        check.difference = Some(format!("cannot write the recomputed file: {e}"));
        return check;
    }
    match std::fs::read_to_string(outputs.join(name)) {
        Ok(published) => {
            // Publication appends `<!-- tbb.node_key: … -->` after a blank line (a
            // newline in SVGs).
            let body = published
                .rfind("<!-- tbb.node_key:")
                .map_or(published.as_str(), |at| &published[..at]);
            let body = body
                .strip_suffix("\n\n")
                .or_else(|| body.strip_suffix('\n'))
                .unwrap_or(body);
            check.bytes_identical = body == text || body == text.trim_end_matches('\n');
            if !check.bytes_identical {
                let line = body
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| body.lines().count().min(text.lines().count()));
                check.difference = Some(format!("differs from line {}", line + 1));
            }
        }
        Err(e) => {
            check.difference = Some(format!(
                "the published file cannot be read ({e}); `tbb apply` publishes it again"
            ));
        }
    }
    check
}

/// A Parquet file as one batch.
fn read_one(path: &Path) -> Result<RecordBatch, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // One batch for the whole table, however many row groups it has.
    let mut reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map(|b| b.with_batch_size(usize::MAX >> 1))
        .and_then(|b| b.build())
        .map_err(|e| e.to_string())?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batch = match reader.next() {
        Some(b) => b.map_err(|e| e.to_string())?,
        None => RecordBatch::new_empty(schema),
    };
    if reader.next().is_some() {
        return Err("the table did not read as one batch".into());
    }
    Ok(batch)
}

/// The first typed difference between a published and a recomputed table.
pub fn first_difference(published: &RecordBatch, recomputed: &RecordBatch) -> Option<String> {
    let (a, b) = (published.schema(), recomputed.schema());
    let names = |s: &arrow_schema::Schema| {
        s.fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect::<Vec<_>>()
    };
    let (na, nb) = (names(&a), names(&b));
    if na != nb {
        let at = na.iter().zip(&nb).position(|(x, y)| x != y);
        return Some(match at {
            Some(i) => format!(
                "column {}: published {} {:?}, recomputed {} {:?}",
                i + 1,
                na[i].0,
                na[i].1,
                nb[i].0,
                nb[i].1
            ),
            None => format!("published {} columns, recomputed {}", na.len(), nb.len()),
        });
    }
    if published.num_rows() != recomputed.num_rows() {
        return Some(format!(
            "published {} rows, recomputed {}",
            published.num_rows(),
            recomputed.num_rows()
        ));
    }
    for (c, field) in a.fields().iter().enumerate() {
        let (x, y) = (published.column(c), recomputed.column(c));
        if x.to_data() == y.to_data() {
            continue;
        }
        let row = (0..x.len()).find(|&r| x.slice(r, 1).to_data() != y.slice(r, 1).to_data());
        if let Some(r) = row {
            return Some(format!(
                "column {} row {}: published {}, recomputed {}",
                field.name(),
                r,
                cell(x.as_ref(), r),
                cell(y.as_ref(), r)
            ));
        }
    }
    None
}

/// One cell as text (the column types tbb writes; others by their debug form).
fn cell(array: &dyn Array, row: usize) -> String {
    if array.is_null(row) {
        return "null".into();
    }
    let any = array.as_any();
    match array.data_type() {
        DataType::Utf8 => any
            .downcast_ref::<StringArray>()
            .map(|a| format!("{:?}", a.value(row))),
        DataType::Boolean => any
            .downcast_ref::<BooleanArray>()
            .map(|a| a.value(row).to_string()),
        DataType::UInt32 => any
            .downcast_ref::<UInt32Array>()
            .map(|a| a.value(row).to_string()),
        DataType::UInt64 => any
            .downcast_ref::<UInt64Array>()
            .map(|a| a.value(row).to_string()),
        DataType::Int64 => any
            .downcast_ref::<Int64Array>()
            .map(|a| a.value(row).to_string()),
        DataType::Float64 => any
            .downcast_ref::<Float64Array>()
            .map(|a| format!("{:?}", a.value(row))),
        _ => None,
    }
    .unwrap_or_else(|| format!("{:?}", array.slice(row, 1)))
}
