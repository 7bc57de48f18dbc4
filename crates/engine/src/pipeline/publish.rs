//! Analysis results and the files published under `outputs/<study>/`.
//!
//! Owns: what an analysis node records (its tables as Parquet bytes, and the text files
//! the report renders), which transcripts the requests table is read from (every graded
//! episode's, from the cache, in DAG order), how a table node writes them — Parquet tables with provenance
//! in their metadata, text files (`report.md`, `report.html`, figure SVGs) ending in a
//! `tbb.node_key` comment — and how a plan tells a published file is still the one its
//! node wrote.
//!
//! Never: runs episodes or decides staleness.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use petgraph::graph::NodeIndex;
use serde::{Deserialize, Serialize};

use super::cache::Cache;
use super::dag::{Publish, Work};
use super::key::NodeKind;
use super::{ExecutePayload, Study, TablePayload};
use crate::harness::transcript::BlobStore;
use crate::manifest::AnalysisKind;
use crate::store::requests::{self, EpisodeRequests, SchemaCounts};
use crate::store::tables::{EpisodeColumns, EpisodeRow, RequestRow};
use crate::store::{write_table, write_text, Provenance};
use tbb_core::compile::Variant;

/// What an analysis node produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Tables, by name (file stem).
    pub tables: Vec<(String, RecordBatch)>,
    /// Text files, by file name.
    pub files: Vec<(String, String)>,
}

/// An analysis node's record in the cache: its tables as Parquet bytes (hex), so that a
/// deleted table is republished without recomputing.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct AnalysisPayload {
    tables: Vec<(String, String)>,
    #[serde(default)]
    files: Vec<(String, String)>,
}

/// Analysis outcomes of this apply (the cache holds the others).
#[derive(Default)]
pub struct Outcomes {
    fresh: HashMap<NodeIndex, Outcome>,
}

impl Outcomes {
    /// Runs analysis node `node` of `study` over `rows` (the report over the outcomes
    /// of the analyses it reads) and returns the payload to commit.
    pub fn run(
        &mut self,
        study: &Study,
        cache: &Cache,
        node: NodeIndex,
        rows: &[EpisodeRow],
    ) -> Result<String, String> {
        let dag = &study.dag;
        let Work::Analysis { index } = dag.graph[node].work else {
            return Err("not an analysis node".into());
        };
        let analysis = &study.manifest.analyses[index];
        let outcome = if analysis.kind == AnalysisKind::Report {
            let mut tables = BTreeMap::new();
            let mut upstream: Vec<NodeIndex> = dag
                .graph
                .neighbors_directed(node, petgraph::Direction::Incoming)
                .collect();
            upstream.sort();
            for u in upstream {
                for (name, batch) in self.get(study, cache, u)?.tables {
                    tables.insert(name, batch);
                }
            }
            let skipped: Vec<(&str, String)> = crate::analysis::skipped(&study.manifest)
                .into_iter()
                .map(|(kind, why)| (kind.name(), why))
                .collect();
            let rendered = crate::report::render(&study.manifest.study, &tables, &skipped)
                .map_err(|e| e.to_string())?;
            Outcome {
                tables: Vec::new(),
                files: rendered.into_files(),
            }
        } else {
            let outputs = crate::analysis::run(analysis, rows).map_err(|e| e.to_string())?;
            Outcome {
                tables: outputs
                    .into_iter()
                    .map(|o| (o.table.to_string(), o.batch))
                    .collect(),
                files: Vec::new(),
            }
        };
        let payload = AnalysisPayload {
            tables: outcome
                .tables
                .iter()
                .map(|(name, b)| Ok((name.clone(), tbb_core::family::hex(&parquet_bytes(b)?))))
                .collect::<Result<_, String>>()?,
            files: outcome.files.clone(),
        };
        self.fresh.insert(node, outcome);
        serde_json::to_string(&payload).map_err(|e| e.to_string())
    }

    /// The outcome of an analysis node: this apply's, or the cached one.
    pub fn get(&self, study: &Study, cache: &Cache, node: NodeIndex) -> Result<Outcome, String> {
        if let Some(o) = self.fresh.get(&node) {
            return Ok(o.clone());
        }
        let key = &study.dag.graph[node].key;
        let payloads = cache.payloads(&[key]).map_err(|e| e.to_string())?;
        let payload: AnalysisPayload = payloads
            .get(key.as_str())
            .and_then(|p| serde_json::from_str(p).ok())
            .ok_or_else(|| {
                format!(
                    "the result of {} is not in the cache",
                    study.dag.graph[node].id
                )
            })?;
        Ok(Outcome {
            tables: payload
                .tables
                .into_iter()
                .map(|(name, hex)| Ok((name, batch_from_parquet(&hex)?)))
                .collect::<Result<_, String>>()?,
            files: payload.files,
        })
    }
}

/// Writes what a table node publishes; returns the file names (relative to
/// `outputs`), recorded as its [`TablePayload`]. `requests` holds the requests of the
/// episodes graded in this apply; the requests table takes them out.
pub fn publish(
    study: &Study,
    node: NodeIndex,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    rows: &[EpisodeRow],
    requests: &mut FreshRequests,
    outcomes: &Outcomes,
    cache: &Cache,
) -> Result<Vec<String>, String> {
    let dag = &study.dag;
    let Work::Table(what) = dag.graph[node].work else {
        return Err("not a table node".into());
    };
    let outputs = study.outputs();
    let provenance = &Provenance {
        manifest_hash: study.manifest.content_hash.clone(),
        lockfile_hash: study.lockfile_hash.clone(),
        node_key: dag.graph[node].key.clone(),
    };
    let outcome = match what {
        Publish::Variants => {
            let mut list: Vec<&Variant> = Vec::new();
            for (i, n) in dag.nodes() {
                if n.kind == NodeKind::Compile {
                    list.push(
                        variants
                            .get(&i)
                            .ok_or_else(|| format!("{} did not compile", n.id))?,
                    );
                }
            }
            Outcome {
                tables: vec![(
                    "variants".into(),
                    crate::store::tables::variants(&list).map_err(|e| e.to_string())?,
                )],
                files: Vec::new(),
            }
        }
        Publish::Episodes => Outcome {
            tables: vec![(
                "episodes".into(),
                crate::store::tables::episodes(rows).map_err(|e| e.to_string())?,
            )],
            files: Vec::new(),
        },
        Publish::Requests => Outcome {
            tables: vec![(
                "requests".into(),
                crate::store::tables::requests(&request_rows(
                    study, cache, variants, rows, requests,
                )?)
                .map_err(|e| e.to_string())?,
            )],
            files: Vec::new(),
        },
        Publish::Analysis(node) => outcomes.get(study, cache, node)?,
    };
    let mut written = Vec::new();
    for (name, batch) in &outcome.tables {
        let file = format!("{name}.parquet");
        write_table(&outputs.join(&file), batch, provenance).map_err(|e| e.to_string())?;
        written.push(file);
    }
    for (name, text) in &outcome.files {
        write_text(
            &outputs.join(name),
            &format!("{text}{}", key_comment(name, &provenance.node_key)),
        )
        .map_err(|e| format!("cannot write {}: {e}", outputs.join(name).display()))?;
        written.push(name.clone());
    }
    Ok(written)
}

/// Execute payloads read from the cache at once: few enough that their transcripts
/// stay small beside the rest (about 10 KiB each), enough that each cache file is read
/// a few times only.
const REQUEST_CHUNK: usize = 4096;

/// The requests of every graded episode, by grade node, read in this apply.
pub type FreshRequests = HashMap<NodeIndex, EpisodeRequests>;

/// The rows of `requests.parquet`, for every grade node in DAG order (`rows` holds their
/// episode rows in that order): the requests this apply read while grading (`fresh`),
/// and for the other episodes the stored transcript of their execute node, read back
/// from the cache, with the trace rebuilt from it — what the grader read.
fn request_rows(
    study: &Study,
    cache: &Cache,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    rows: &[EpisodeRow],
    fresh: &mut FreshRequests,
) -> Result<Vec<RequestRow>, String> {
    let dag = &study.dag;
    let grades: Vec<(NodeIndex, NodeIndex, NodeIndex)> = dag
        .nodes()
        .filter_map(|(g, n)| match n.work {
            Work::Grade { execute, compile } => Some((g, execute, compile)),
            _ => None,
        })
        .collect();
    if grades.len() != rows.len() {
        return Err(format!(
            "{} graded episodes but {} episode rows",
            grades.len(),
            rows.len()
        ));
    }
    let cached: Vec<&(NodeIndex, NodeIndex, NodeIndex)> = grades
        .iter()
        .filter(|(g, _, _)| !fresh.contains_key(g))
        .collect();
    if !cached.is_empty() {
        let blobs = BlobStore {
            blobs: cache
                .blobs()
                .map_err(|e| e.to_string())?
                .into_iter()
                .collect(),
        };
        let mut counts = SchemaCounts::default();
        for chunk in cached.chunks(REQUEST_CHUNK) {
            let keys: Vec<&str> = chunk
                .iter()
                .map(|&&(_, execute, _)| dag.graph[execute].key.as_str())
                .collect();
            let payloads = cache.payloads(&keys).map_err(|e| e.to_string())?;
            for &&(grade, execute, compile) in chunk {
                let node = &dag.graph[execute];
                let payload: ExecutePayload = payloads
                    .get(&node.key)
                    .and_then(|p| serde_json::from_str(p).ok())
                    .ok_or_else(|| format!("the transcript of {} is not in the cache", node.id))?;
                let variant = variants
                    .get(&compile)
                    .ok_or_else(|| format!("the variant of {} did not compile", node.id))?;
                let trace = payload.transcript.trace(&blobs, variant).ok_or_else(|| {
                    format!("the transcript of {} does not rebuild a trace", node.id)
                })?;
                let read = requests::read(&payload.transcript, &trace, &blobs, &mut counts)
                    .map_err(|e| format!("{}: {e}", node.id))?;
                fresh.insert(grade, read);
            }
        }
    }
    let mut out = Vec::new();
    for (&(grade, execute, _), row) in grades.iter().zip(rows) {
        let read = fresh
            .remove(&grade)
            .ok_or_else(|| format!("the requests of {} were not read", dag.graph[grade].id))?;
        let episode = Arc::new(EpisodeColumns::of(
            row,
            &read.episode_key,
            &dag.graph[execute].key,
        ));
        out.extend(requests::rows(&episode, read));
    }
    Ok(out)
}

/// The comment a published text file ends with, naming the node that wrote it.
fn key_comment(file: &str, key: &str) -> String {
    let sep = if file.ends_with(".svg") { "\n" } else { "\n\n" };
    format!("{sep}<!-- tbb.node_key: {key} -->\n")
}

/// Why a recorded table node's files are not all there as it wrote them, if they are not.
pub fn problem(outputs: &Path, key: &str, payload: Option<&String>) -> Option<String> {
    let Some(payload) = payload.and_then(|p| serde_json::from_str::<TablePayload>(p).ok()) else {
        return Some("its record is unreadable".into());
    };
    for file in &payload.files {
        let path = outputs.join(file);
        let intact = if file.ends_with(".parquet") {
            match crate::store::read_metadata(&path) {
                Err(_) => return Some(format!("{} is missing", path.display())),
                Ok(meta) => meta.iter().any(|(k, v)| k == "tbb.node_key" && v == key),
            }
        } else {
            match std::fs::read_to_string(&path) {
                Err(_) => return Some(format!("{} is missing", path.display())),
                Ok(text) => text.ends_with(&key_comment(file, key)),
            }
        };
        if !intact {
            return Some(format!("{} was overwritten", path.display()));
        }
    }
    None
}

fn parquet_bytes(batch: &RecordBatch) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None)
        .map_err(|e| e.to_string())?;
    writer.write(batch).map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(out)
}

fn batch_from_parquet(hex: &str) -> Result<RecordBatch, String> {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<_, _>>()
        .map_err(|_| "the cached analysis table is not hex".to_string())?;
    // One batch for the whole table, however many rows it has.
    let mut reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .map(|b| b.with_batch_size(usize::MAX >> 1))
    .and_then(|b| b.build())
    .map_err(|e| e.to_string())?;
    match reader.next() {
        Some(batch) => batch.map_err(|e| e.to_string()),
        None => Err("the cached analysis table is empty".into()),
    }
}
