//! Analysis results and the files published under `outputs/<study>/`.
//!
//! Owns: what an analysis node records (the names of its tables, kept as Parquet in the
//! cache, and the text files the report renders), the inputs it is handed (the episodes,
//! the variants, the request rows — spilled to disk once per apply and read back in
//! passes by the requests table and the analyses that declare them
//! ([`super::request_spill`]) —, other analyses' tables, another study's table), how a
//! table node writes them — Parquet tables with provenance
//! in their metadata, text files (`report.md`, `report.html`, figure SVGs) ending in a
//! `tbb.node_key` comment, and beside the report `episodes.html`, rendered from the rows
//! when the report is published rather than stored with its analysis (a row per episode:
//! tens of megabytes a large study would carry through the cache) — and how a plan tells
//! a published file is still the one its node wrote. `tbb report` writes the report
//! through the same [`publish`] ([`republish_report`]), so there is one report, apply's.
//!
//! Never: runs episodes or decides staleness.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use petgraph::graph::NodeIndex;
use serde::{Deserialize, Serialize};

use super::cache::Cache;
use super::dag::{Publish, Work};
use super::failure::NodeFailure;
use super::key::NodeKind;
use super::request_spill::{RequestRows, Spill, SpilledRequests};
use super::{Study, TablePayload};
use tbb_analysis::{Context, Input};
use tbb_core::compile::Variant;
use tbb_tables::rows::{EpisodeRow, RequestRow, VariantRow};
use tbb_tables::{
    write_table, write_text_parts, write_text_with, Provenance, ScenarioEpisodeRow, TableRow,
};

/// What an analysis node produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Tables, by name (file stem).
    pub tables: Vec<(String, RecordBatch)>,
    /// Text files, by file name.
    pub files: Vec<(String, String)>,
    /// Episodes whose pages the files link to (written at publication, see
    /// [`tbb_analysis::Produced::episodes`]).
    pub episodes: Vec<String>,
}

/// An analysis node's record in the cache: the names of its tables (stored as Parquet
/// in the cache, [`Cache::put_tables`], so that a deleted table is republished without
/// recomputing) and its text files.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalysisPayload {
    tables: Vec<String>,
    #[serde(default)]
    files: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    episodes: Vec<String>,
}

impl AnalysisPayload {
    /// The layout of this row in the cache: bump it when a field is added, removed,
    /// renamed or retyped, so that every analysis node reruns ([`super::rows`]).
    pub const ROW_VERSION: u32 = 1;
}

/// An [`AnalysisPayload`] as it is written, borrowing the outcome it records (the same
/// JSON, field for field, without a copy of its text files).
#[derive(Serialize)]
struct AnalysisPayloadOf<'a> {
    tables: Vec<&'a str>,
    files: &'a [(String, String)],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    episodes: &'a [String],
}

/// Analysis outcomes of this apply (the cache holds the others), and the ToolSandbox
/// rows the analyses and `toolsandbox_episodes.parquet` read.
#[derive(Default)]
pub struct Outcomes {
    // Shared with the table node that publishes it: the report's text files run to
    // tens of megabytes at four repeats, and a copy per reader was the apply's peak.
    fresh: HashMap<NodeIndex, Arc<Outcome>>,
    /// Every scenario grade node's row, in DAG order (empty without `[toolsandbox]`).
    scenario_rows: Vec<ScenarioEpisodeRow>,
}

impl Outcomes {
    /// Outcomes to come, over these ToolSandbox rows.
    pub fn with_scenarios(scenario_rows: Vec<ScenarioEpisodeRow>) -> Outcomes {
        Outcomes {
            fresh: HashMap::new(),
            scenario_rows,
        }
    }

    /// The ToolSandbox rows.
    pub fn scenario_rows(&self) -> &[ScenarioEpisodeRow] {
        &self.scenario_rows
    }

    /// Runs analysis node `node` of `study` on the inputs its kind declares — `rows`
    /// (the episodes), the variants, the request rows (asked of `requests` only when
    /// declared: reading them means reading every transcript), the tables of the
    /// analyses it reads, another study's table — writes its tables into the cache and
    /// returns the payload to commit.
    pub fn run(
        &mut self,
        study: &Study,
        cache: &Cache,
        node: NodeIndex,
        rows: &[EpisodeRow],
        variants: &HashMap<NodeIndex, Arc<Variant>>,
        requests: &mut dyn FnMut() -> Result<Arc<Spill>, NodeFailure>,
    ) -> Result<String, NodeFailure> {
        let dag = &study.dag;
        let Work::Analysis { index } = dag.graph[node].work else {
            return Err(NodeFailure::internal("not an analysis node"));
        };
        let analysis = &study.manifest.analyses[index];
        let mut tables: BTreeMap<String, RecordBatch> = BTreeMap::new();
        let mut reads: Vec<NodeIndex> = dag
            .graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .filter(|&u| dag.graph[u].kind == NodeKind::Analysis)
            .collect();
        reads.sort();
        let mut episodes: &[EpisodeRow] = &[];
        let mut spilled: Option<Arc<Spill>> = None;
        for declared in analysis.kind.kind().inputs() {
            match *declared {
                Input::Episodes => episodes = rows,
                Input::Requests => spilled = Some(requests()?),
                Input::Variants => {
                    tables.insert(VariantRow::TABLE.into(), variants_table(study, variants)?);
                }
                Input::Table(table) => match analysis.from_study(table) {
                    Some(from) => {
                        tables.insert(table.into(), upstream_table(study, from, table)?);
                    }
                    None => {
                        for &u in &reads {
                            for (name, batch) in &self.get(study, cache, u)?.tables {
                                if name == table {
                                    tables.insert(name.clone(), batch.clone());
                                }
                            }
                        }
                    }
                },
                Input::ScenarioEpisodes => {
                    tables.insert(
                        ScenarioEpisodeRow::TABLE.into(),
                        ScenarioEpisodeRow::to_batch(&self.scenario_rows)?,
                    );
                }
                Input::EveryAnalysis => {
                    for &u in &reads {
                        tables.extend(self.get(study, cache, u)?.tables.iter().cloned());
                    }
                }
            }
        }
        let skipped_kinds = study.manifest.skipped_analyses();
        let skipped: Vec<(&str, String)> = skipped_kinds
            .iter()
            .map(|(kind, why)| (kind.name(), why.clone()))
            .collect();
        let given_requests = spilled
            .as_deref()
            .map(|spill| SpilledRequests { spill, rows });
        let context = Context {
            study: &study.manifest.study,
            episodes,
            requests: match &given_requests {
                Some(given) => given,
                None => &tbb_analysis::NO_REQUESTS,
            },
            tables: &tables,
            skipped: &skipped,
        };
        let produced = analysis.kind.kind().run(&analysis.params, &context)?;
        let outcome = Outcome {
            tables: produced
                .tables
                .into_iter()
                .map(|o| (o.table.to_string(), o.batch))
                .collect(),
            files: produced.files,
            episodes: produced.episodes,
        };
        cache.put_tables(&dag.graph[node].key, &outcome.tables)?;
        let payload = serde_json::to_string(&AnalysisPayloadOf {
            tables: outcome.tables.iter().map(|(n, _)| n.as_str()).collect(),
            files: &outcome.files,
            episodes: &outcome.episodes,
        })
        .map_err(|e| NodeFailure::internal(e.to_string()))?;
        self.fresh.insert(node, Arc::new(outcome));
        Ok(payload)
    }

    /// The outcome of an analysis node: this apply's, or the cached one.
    pub fn get(
        &self,
        study: &Study,
        cache: &Cache,
        node: NodeIndex,
    ) -> Result<Arc<Outcome>, NodeFailure> {
        if let Some(o) = self.fresh.get(&node) {
            return Ok(o.clone());
        }
        let key = &study.dag.graph[node].key;
        let id = study.dag.graph[node].id();
        let payloads = cache.payloads(&[key])?;
        let payload: AnalysisPayload = payloads
            .get(key.as_ref())
            .ok_or_else(|| NodeFailure::internal(format!("the result of {id} is not in the cache")))
            .and_then(|p| {
                super::rows::read(p).map_err(|detail| NodeFailure::StoredRowUnreadable {
                    node: id.clone(),
                    detail,
                })
            })?;
        Ok(Arc::new(Outcome {
            tables: payload
                .tables
                .into_iter()
                .map(|name| {
                    let batch = cache.table(key, &name)?;
                    Ok((name, batch))
                })
                .collect::<Result<_, NodeFailure>>()?,
            files: payload.files,
            episodes: payload.episodes,
        }))
    }
}

/// The `variants` table of every compile node (in DAG order).
fn variants_table(
    study: &Study,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
) -> Result<RecordBatch, NodeFailure> {
    let mut list: Vec<&Variant> = Vec::new();
    for (i, n) in study.dag.nodes() {
        if n.kind == NodeKind::Compile {
            list.push(variants.get(&i).ok_or_else(|| NodeFailure::Upstream {
                node: n.id(),
                cause: Box::new(NodeFailure::Compile {
                    detail: "it did not compile in this apply".into(),
                }),
            })?);
        }
    }
    Ok(tbb_tables::rows::variants(&list)?)
}

/// Another study's table, checked against the hash the analysis's key holds (the file
/// may not change between plan and apply).
fn upstream_table(study: &Study, from: &str, table: &str) -> Result<RecordBatch, NodeFailure> {
    let path = super::upstream::table_path(&study.paths.outputs, from, table)
        .map_err(|e| NodeFailure::io(e.to_string()))?;
    let bytes = std::fs::read(&path)
        .map_err(|e| NodeFailure::io(format!("cannot read {}: {e}", path.display())))?;
    let pinned = study
        .upstream
        .iter()
        .find(|s| s.pin.study == from && s.pin.table == table)
        .and_then(|s| s.pin.blake3.as_deref());
    if pinned != Some(super::key::hash_hex(&bytes).as_str()) {
        return Err(NodeFailure::UpstreamStudyChanged {
            detail: format!(
                "{} changed since this apply was planned; plan and apply again",
                path.display()
            ),
        });
    }
    super::upstream::batch_of(&path, bytes).map_err(NodeFailure::io)
}

/// Writes what a table node publishes; returns the file names (relative to
/// `outputs`), recorded as its [`TablePayload`]. `requests` are the study's request
/// rows, spilled by the first node that reads them.
pub fn publish(
    study: &Study,
    node: NodeIndex,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    rows: &[EpisodeRow],
    requests: &mut RequestRows,
    outcomes: &Outcomes,
    cache: &Cache,
) -> Result<Vec<String>, NodeFailure> {
    let dag = &study.dag;
    let Work::Table(what) = dag.graph[node].work else {
        return Err(NodeFailure::internal("not a table node"));
    };
    let outputs = study.outputs();
    let provenance = &Provenance {
        manifest_hash: study.manifest.content_hash.clone(),
        lockfile_hash: study.lockfile_hash.clone(),
        node_key: dag.graph[node].key.to_string(),
    };
    let outcome = match what {
        Publish::Variants => Arc::new(Outcome {
            tables: vec![(VariantRow::TABLE.into(), variants_table(study, variants)?)],
            files: Vec::new(),
            episodes: Vec::new(),
        }),
        // The two tables of a row per episode or request, a chunk of rows at a time.
        Publish::Episodes => {
            let file = format!("{}.parquet", EpisodeRow::TABLE);
            tbb_tables::rows::write_episodes(&outputs.join(&file), rows, provenance)?;
            return Ok(vec![file]);
        }
        Publish::Requests => {
            let spill = requests.get(study, cache, variants, rows)?;
            let file = format!("{}.parquet", RequestRow::TABLE);
            let path = outputs.join(&file);
            let mut writer = tbb_tables::rows::requests_writer(&path, provenance);
            spill.for_each(rows, &mut |row| Ok(writer.push(row)?))?;
            writer.finish()?;
            return Ok(vec![file]);
        }
        Publish::ScenarioEpisodes => Arc::new(Outcome {
            tables: vec![(
                ScenarioEpisodeRow::TABLE.into(),
                ScenarioEpisodeRow::to_batch(outcomes.scenario_rows())?,
            )],
            files: Vec::new(),
            episodes: Vec::new(),
        }),
        Publish::ScenarioRequests => {
            let requests = super::scenarios::request_rows(cache, outcomes.scenario_rows())?;
            Arc::new(Outcome {
                tables: vec![(
                    tbb_tables::scenarios::ScenarioRequestRow::TABLE.into(),
                    tbb_tables::scenarios::ScenarioRequestRow::to_batch(&requests)?,
                )],
                files: Vec::new(),
                episodes: Vec::new(),
            })
        }
        Publish::Analysis(node) => outcomes.get(study, cache, node)?,
    };
    // A study of ToolSandbox scenarios alone has no episode of tbb's to list.
    let index_of = match what {
        Publish::Analysis(a) if is_report(study, a) && !study.manifest.families.is_empty() => {
            Some(rows)
        }
        _ => None,
    };
    let mut written = Vec::new();
    let result = write_outcome(
        study,
        cache,
        variants,
        (&outcome, index_of),
        provenance,
        &mut written,
    );
    if let Err(failure) = result {
        // A text file written before the failure would be a report beside tables it
        // does not describe (its key comment names a node that was never recorded).
        remove_text_files(&outputs, &written);
        return Err(failure);
    }
    Ok(written)
}

/// Whether analysis node `analysis` is the report, whose publication also writes
/// `episodes.html` from the rows.
pub(super) fn is_report(study: &Study, analysis: NodeIndex) -> bool {
    match study.dag.graph[analysis].work {
        Work::Analysis { index } => {
            study.manifest.analyses[index].kind.name()
                == <tbb_report::kind::Report as tbb_analysis::Typed>::NAME
        }
        _ => false,
    }
}

/// `episodes.html` of `rows`, its keys in bold where `outcome` published their pages.
pub fn episode_index(study: &Study, rows: &[EpisodeRow], outcome: &Outcome) -> String {
    let paged: HashSet<&str> = outcome.episodes.iter().map(String::as_str).collect();
    tbb_report::index::render(&study.manifest.study, rows, &paged)
}

/// Writes an outcome's tables, text files, the index of `rows` when given (the
/// report's) and the episode pages under `outputs/<study>/`, listing each file in
/// `written` as soon as it is in place.
fn write_outcome(
    study: &Study,
    cache: &Cache,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    (outcome, index_of): (&Outcome, Option<&[EpisodeRow]>),
    provenance: &Provenance,
    written: &mut Vec<String>,
) -> Result<(), NodeFailure> {
    let outputs = study.outputs();
    for (name, batch) in &outcome.tables {
        let file = format!("{name}.parquet");
        write_table(&outputs.join(&file), batch, provenance)?;
        written.push(file);
    }
    let text = |name: &String, text: &String| {
        write_text_parts(
            &outputs.join(name),
            &[text, &key_comment(name, &provenance.node_key)],
        )
        .map_err(|e| {
            NodeFailure::io(format!(
                "cannot write {}: {e}",
                outputs.join(name).display()
            ))
        })
    };
    for (name, body) in &outcome.files {
        text(name, body)?;
        written.push(name.clone());
    }
    if let Some(rows) = index_of {
        let name = tbb_report::index::FILE.to_string();
        let path = outputs.join(&name);
        let paged: HashSet<&str> = outcome.episodes.iter().map(String::as_str).collect();
        // Streamed to the file: the page of every episode runs to tens of megabytes.
        write_text_with(&path, |mut out| {
            tbb_report::index::write(&mut out, &study.manifest.study, rows, &paged)?;
            out.write_all(key_comment(&name, &provenance.node_key).as_bytes())
        })
        .map_err(|e| NodeFailure::io(format!("cannot write {}: {e}", path.display())))?;
        written.push(name);
    }
    // The pages of the episodes the report links to, read from their transcripts.
    if !outcome.episodes.is_empty() {
        let pages = crate::show::pages(study, cache, variants, &outcome.episodes)
            .map_err(|e| NodeFailure::internal(format!("the pages of the linked episodes: {e}")))?;
        for (name, body) in &pages {
            text(name, body)?;
            written.push(name.clone());
        }
    }
    Ok(())
}

/// Removes the text files (report, figures, episode pages) among `files` (relative to
/// `outputs`); returns those it removed. Tables stay: each is its own node's.
pub fn remove_text_files(outputs: &Path, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| !f.ends_with(".parquet"))
        .filter(|f| std::fs::remove_file(outputs.join(f)).is_ok())
        .cloned()
        .collect()
}

/// The comment a published text file ends with, naming the node that wrote it.
fn key_comment(file: &str, key: &str) -> String {
    let sep = if file.ends_with(".svg") { "\n" } else { "\n\n" };
    format!("{sep}<!-- tbb.node_key: {key} -->\n")
}

/// Whether the file at `path` ends with `tail`, read from its end: a report's episode
/// index is 25 MB at 4 repeats of the capacity study, and every plan checks it.
fn ends_with(path: &Path, tail: &[u8]) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let Ok(tail_len) = u64::try_from(tail.len()) else {
        return Ok(false);
    };
    if len < tail_len {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(len - tail_len))?;
    let mut end = Vec::with_capacity(tail.len());
    file.take(tail_len).read_to_end(&mut end)?;
    Ok(end == tail)
}

/// Why a recorded table node's files are not all there as it wrote them, if they are not.
pub fn problem(outputs: &Path, key: &str, payload: Option<&String>) -> Option<String> {
    let Some(payload) = payload.and_then(|p| serde_json::from_str::<TablePayload>(p).ok()) else {
        return Some("its record is unreadable".into());
    };
    for file in &payload.files {
        let path = outputs.join(file);
        let intact = if file.ends_with(".parquet") {
            match tbb_tables::read_metadata(&path) {
                Err(_) => return Some(format!("{} is missing", path.display())),
                Ok(meta) => meta.iter().any(|(k, v)| k == "tbb.node_key" && v == key),
            }
        } else {
            match ends_with(&path, key_comment(file, key).as_bytes()) {
                Err(_) => return Some(format!("{} is missing", path.display())),
                Ok(ends) => ends,
            }
        };
        if !intact {
            return Some(format!("{} was overwritten", path.display()));
        }
    }
    None
}

/// `tbb report`: writes the report exactly as apply publishes it — the files its report
/// table node wrote, from the report analysis recorded in the cache, ending in that
/// node's key — and records the table node when the plan had it to run. Call under the
/// outputs lock with `plan` made under it. Refuses when anything the report reads must
/// run first: then the report would not be apply's.
///
/// Returns the files written (relative to `outputs/<study>/`).
pub fn republish_report(
    study: &Study,
    cache: &mut Cache,
    plan: &super::Plan,
) -> Result<Vec<String>, super::PipelineError> {
    let dag = &study.dag;
    let manifest = study.manifest.path.display().to_string();
    let reports: Vec<NodeIndex> = dag
        .nodes()
        .filter_map(|(i, n)| match n.work {
            Work::Table(Publish::Analysis(a)) if is_report(study, a) => Some(i),
            _ => None,
        })
        .collect();
    if reports.is_empty() {
        return Err(super::PipelineError::NoReport { manifest });
    }
    let runs: std::collections::HashSet<NodeIndex> = plan
        .nodes
        .iter()
        .filter(|p| p.action.runs())
        .filter_map(|p| p.node)
        .collect();
    // Everything the report tables read, directly or not.
    let mut upstream: Vec<NodeIndex> = Vec::new();
    let mut seen: std::collections::HashSet<NodeIndex> = reports.iter().copied().collect();
    let mut stack = reports.clone();
    while let Some(i) = stack.pop() {
        for u in dag
            .graph
            .neighbors_directed(i, petgraph::Direction::Incoming)
        {
            if seen.insert(u) {
                // The episodes table node stands for the episodes (every analysis of
                // them has an edge from it, not from each grade node): the analyses read
                // the rows from the cache, never its file, so it is walked through and
                // not waited for.
                if !matches!(dag.graph[u].work, Work::Table(Publish::Episodes)) {
                    upstream.push(u);
                }
                stack.push(u);
            }
        }
    }
    upstream.sort();
    let pending: Vec<NodeIndex> = upstream.into_iter().filter(|i| runs.contains(i)).collect();
    if let Some(&first) = pending.first() {
        return Err(super::PipelineError::ReportStale {
            manifest,
            pending: pending.len(),
            first: dag.graph[first].id(),
        });
    }
    // The rows `episodes.html` lists, as apply handed them to the report.
    let rows = super::reproduce::stored_rows(study, cache).map_err(|e| {
        super::PipelineError::ReportFailed {
            failure: NodeFailure::io(e.to_string()),
        }
    })?;
    let mut written = Vec::new();
    let mut batch = super::cache::Batch::default();
    for node in reports {
        let files = publish(
            study,
            node,
            &HashMap::new(),
            &rows,
            &mut RequestRows::default(),
            &Outcomes::default(),
            cache,
        )
        .map_err(|failure| super::PipelineError::ReportFailed { failure })?;
        if runs.contains(&node) {
            batch.nodes.push(super::committer::entry(
                dag,
                node,
                &TablePayload {
                    files: files.clone(),
                },
            ));
        }
        written.extend(files);
    }
    cache.commit(batch)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's key comment is checked from its end: present, changed, missing, and a
    /// file shorter than the comment.
    #[test]
    fn a_text_file_is_intact_only_when_it_ends_with_its_key_comment() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("report.md");
        let comment = key_comment("report.md", "abc");
        let check = |text: &str| {
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
            ends_with(&path, comment.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
        };
        assert!(check(&format!("# Report{comment}")));
        assert!(check(&comment));
        assert!(!check(&format!(
            "# Report{}",
            key_comment("report.md", "abd")
        )));
        assert!(!check(&format!("# Report{comment}edited")));
        assert!(!check("x"));
        assert!(ends_with(&dir.path().join("absent.md"), comment.as_bytes()).is_err());
    }
}
