//! The request rows of one apply (or reproduction), kept on disk while the requests
//! table and the analyses that read requests go through them, so that no process holds
//! every request of a study at once (at 4 repeats the capacity study has 326,010).
//!
//! Owns: where each episode's requests are read from — the record the cache stores
//! beside its transcript ([`tbb_tables::stored_requests`]), or, for an episode without
//! a readable one (or in a reproduction, for every episode), its transcript with the
//! trace rebuilt from it — and the spill: each episode's record appended to one of a
//! few bucket files by its place among the grade nodes in DAG order, read back a
//! bucket at a time and put in that order, so that every pass yields the rows in the
//! table's order, whatever order the cache gave them in. A bucket holds
//! [`BUCKET_EPISODES`] episodes or more (at most [`MAX_BUCKETS`] files); the folder is
//! a hidden temporary one in the study's outputs, removed when the rows are dropped.
//!
//! Never: decides what a column means (`tbb_tables::requests` does) or writes the table
//! (`super::publish` does).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use petgraph::graph::NodeIndex;

use super::cache::Cache;
use super::dag::Work;
use super::failure::NodeFailure;
use super::{ExecutePayload, Study};
use tbb_analysis::AnalysisError;
use tbb_core::compile::Variant;
use tbb_harness::transcript::BlobStore;
use tbb_tables::requests::{self, EpisodeRequests};
use tbb_tables::rows::{EpisodeColumns, EpisodeRow, RequestRow};
use tbb_tables::stored_requests;

/// Episodes per bucket, at least: enough that a small study is one or two files, few
/// enough that a bucket's requests (about 4.5 per episode) are a few MB.
pub const BUCKET_EPISODES: usize = 4096;

/// Bucket files at most: a larger study puts more episodes in each.
pub const MAX_BUCKETS: usize = 64;

/// Execute payloads read from the cache at once, for the episodes whose requests are
/// read off their transcripts: few enough that their transcripts stay small beside the
/// rest (about 10 KiB each), enough that each cache file is read a few times only.
const TRANSCRIPT_CHUNK: usize = 4096;

/// The request rows of one apply: spilled on first use, then read as often as the
/// requests table and the analyses need.
#[derive(Default)]
pub struct RequestRows {
    /// Whether every episode's requests are read off its transcript again, the records
    /// stored beside the transcripts unread (reproduction: the published table must
    /// follow from the transcripts themselves).
    from_transcripts: bool,
    spilled: Option<Arc<Spill>>,
}

impl RequestRows {
    /// Rows read from the records stored beside the transcripts (from the transcript
    /// itself for an episode without one).
    pub fn new() -> RequestRows {
        RequestRows::default()
    }

    /// Rows read from every episode's stored transcript.
    pub fn from_transcripts() -> RequestRows {
        RequestRows {
            from_transcripts: true,
            spilled: None,
        }
    }

    /// The spilled rows of every grade node in DAG order (`rows` holds their episode
    /// rows in that order); spilled on the first call.
    pub fn get(
        &mut self,
        study: &Study,
        cache: &Cache,
        variants: &HashMap<NodeIndex, Arc<Variant>>,
        rows: &[EpisodeRow],
    ) -> Result<Arc<Spill>, NodeFailure> {
        if let Some(spilled) = &self.spilled {
            return Ok(spilled.clone());
        }
        let spilled = Arc::new(Spill::write(
            study,
            cache,
            variants,
            rows,
            self.from_transcripts,
        )?);
        self.spilled = Some(spilled.clone());
        Ok(spilled)
    }
}

/// The requests of a study's episodes on disk, in buckets by their place in DAG order.
pub struct Spill {
    dir: tempfile::TempDir,
    /// Episodes per bucket.
    per_bucket: usize,
    /// Episodes in all.
    episodes: usize,
}

impl Spill {
    fn bucket_path(&self, bucket: usize) -> PathBuf {
        self.dir.path().join(format!("{bucket}.bin"))
    }

    fn write(
        study: &Study,
        cache: &Cache,
        variants: &HashMap<NodeIndex, Arc<Variant>>,
        rows: &[EpisodeRow],
        from_transcripts: bool,
    ) -> Result<Spill, NodeFailure> {
        let dag = &study.dag;
        let grades: Vec<(NodeIndex, NodeIndex)> = dag
            .nodes()
            .filter_map(|(_, n)| match n.work {
                Work::Grade { execute, compile } => Some((execute, compile)),
                _ => None,
            })
            .collect();
        if grades.len() != rows.len() {
            return Err(NodeFailure::internal(format!(
                "{} graded episodes but {} episode rows",
                grades.len(),
                rows.len()
            )));
        }
        // The rows and the grade nodes name the same transcripts, or the join the
        // tables promise would pair the wrong rows.
        if let Some((&(execute, _), _)) = grades
            .iter()
            .zip(rows)
            .find(|(&(execute, _), row)| *row.transcript_ref != *dag.graph[execute].key)
        {
            return Err(NodeFailure::internal(format!(
                "the episode row of {} names another transcript",
                dag.graph[execute].id()
            )));
        }
        let outputs = study.outputs();
        std::fs::create_dir_all(&outputs).map_err(|e| spill_io(&outputs, &e))?;
        let dir = tempfile::Builder::new()
            .prefix(".tbb-requests-")
            .tempdir_in(&outputs)
            .map_err(|e| spill_io(&outputs, &e))?;
        let per_bucket = BUCKET_EPISODES.max(rows.len().div_ceil(MAX_BUCKETS));
        let spill = Spill {
            dir,
            per_bucket,
            episodes: rows.len(),
        };
        let mut buckets = Buckets::open(&spill)?;
        let mut read = vec![false; rows.len()];
        if !from_transcripts {
            let place: HashMap<&str, usize> = grades
                .iter()
                .enumerate()
                .map(|(place, &(execute, _))| (dag.graph[execute].key.as_ref(), place))
                .collect();
            let layout = stored_requests::LAYOUT.to_string();
            let mut failure: Option<NodeFailure> = None;
            cache.stored_requests(&mut |key, stored_layout, record| {
                if stored_layout != layout || failure.is_some() {
                    return Ok(());
                }
                if let Some(&place) = place.get(key) {
                    // A record that does not read is left out: its episode's requests are
                    // read off its transcript. A later record of the same episode
                    // replaces an earlier one when the bucket is read back.
                    if stored_requests::from_json(record).is_ok() {
                        match buckets.append(place, record) {
                            Ok(()) => read[place] = true,
                            Err(e) => failure = Some(e),
                        }
                    }
                }
                Ok(())
            })?;
            if let Some(failure) = failure {
                return Err(failure);
            }
        }
        let unread: Vec<usize> = (0..rows.len()).filter(|&p| !read[p]).collect();
        if !unread.is_empty() {
            let blobs = BlobStore {
                blobs: cache.blobs()?.into_iter().collect(),
            };
            for chunk in unread.chunks(TRANSCRIPT_CHUNK) {
                let keys: Vec<&str> = chunk
                    .iter()
                    .map(|&p| dag.graph[grades[p].0].key.as_ref())
                    .collect();
                let payloads = cache.payloads(&keys)?;
                for &place in chunk {
                    let (execute, compile) = grades[place];
                    let requests =
                        off_transcript(study, &payloads, &blobs, variants, execute, compile)?;
                    buckets.append(place, &stored_requests::to_json(&requests))?;
                }
            }
        }
        buckets.finish()?;
        Ok(spill)
    }

    /// Calls `each` with every request row, in DAG order of their episodes (`rows`, the
    /// episode rows the spill was written for), reading one bucket at a time.
    pub fn for_each(
        &self,
        rows: &[EpisodeRow],
        each: &mut dyn FnMut(RequestRow) -> Result<(), NodeFailure>,
    ) -> Result<(), NodeFailure> {
        if rows.len() != self.episodes {
            return Err(NodeFailure::internal(format!(
                "the requests were spilled for {} episodes, read for {}",
                self.episodes,
                rows.len()
            )));
        }
        for (bucket, rows) in rows.chunks(self.per_bucket).enumerate() {
            let path = self.bucket_path(bucket);
            let mut bytes = Vec::new();
            File::open(&path)
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .map_err(|e| spill_io(&path, &e))?;
            let read = read_bucket(&bytes, bucket * self.per_bucket, rows.len())
                .map_err(|why| NodeFailure::io(format!("{}: {why}", path.display())))?;
            drop(bytes);
            for (row, requests) in rows.iter().zip(read) {
                let requests = requests.ok_or_else(|| {
                    NodeFailure::internal(format!(
                        "the requests of episode {} were not read",
                        row.episode_key
                    ))
                })?;
                if row.episode_key != requests.episode_key {
                    return Err(NodeFailure::internal(format!(
                        "the requests read for episode {} belong to episode {}",
                        row.episode_key, requests.episode_key
                    )));
                }
                let episode = Arc::new(EpisodeColumns::of(row));
                for row in requests::rows(&episode, requests) {
                    each(row)?;
                }
            }
        }
        Ok(())
    }
}

/// The spill of `rows` as the analyses read it.
pub struct SpilledRequests<'a> {
    /// The spill.
    pub spill: &'a Spill,
    /// The episode rows it was written for.
    pub rows: &'a [EpisodeRow],
}

impl tbb_analysis::Requests for SpilledRequests<'_> {
    fn for_each(&self, each: &mut dyn FnMut(&RequestRow)) -> Result<(), AnalysisError> {
        self.spill
            .for_each(self.rows, &mut |row| {
                each(&row);
                Ok(())
            })
            .map_err(|e| AnalysisError::RequestsUnread {
                detail: e.to_string(),
            })
    }
}

/// The bucket files being written.
struct Buckets {
    files: Vec<(PathBuf, BufWriter<File>)>,
    per_bucket: usize,
}

impl Buckets {
    fn open(spill: &Spill) -> Result<Buckets, NodeFailure> {
        let count = spill.episodes.div_ceil(spill.per_bucket);
        let files = (0..count)
            .map(|b| {
                let path = spill.bucket_path(b);
                File::create(&path)
                    .map(|f| (path.clone(), BufWriter::new(f)))
                    .map_err(|e| spill_io(&path, &e))
            })
            .collect::<Result<_, _>>()?;
        Ok(Buckets {
            files,
            per_bucket: spill.per_bucket,
        })
    }

    /// Appends the record of the episode at `place`, after its [`header`].
    fn append(&mut self, place: usize, record: &str) -> Result<(), NodeFailure> {
        let (path, file) = self
            .files
            .get_mut(place / self.per_bucket)
            .ok_or_else(|| NodeFailure::internal(format!("episode {place} has no bucket")))?;
        file.write_all(&header(place, record))
            .and_then(|()| file.write_all(record.as_bytes()))
            .map_err(|e| spill_io(path, &e))
    }

    fn finish(self) -> Result<(), NodeFailure> {
        for (path, mut file) in self.files {
            file.flush().map_err(|e| spill_io(&path, &e))?;
        }
        Ok(())
    }
}

/// The records of a bucket's episodes, by place from `base` (`len` of them): the last
/// record of each, whatever order they were appended in.
fn read_bucket(
    mut bytes: &[u8],
    base: usize,
    len: usize,
) -> Result<Vec<Option<EpisodeRequests>>, String> {
    let mut read: Vec<Option<EpisodeRequests>> = vec![None; len];
    while !bytes.is_empty() {
        let (place, record, rest) = frame(bytes).ok_or("cut short")?;
        bytes = rest;
        let slot = place
            .checked_sub(base)
            .and_then(|i| read.get_mut(i))
            .ok_or_else(|| format!("episode {place} is not this bucket's"))?;
        let record = std::str::from_utf8(record).map_err(|e| e.to_string())?;
        *slot = Some(stored_requests::from_json(record)?);
    }
    Ok(read)
}

/// What precedes a record in its bucket: its place and its length, each a
/// little-endian u64.
fn header(place: usize, record: &str) -> [u8; 16] {
    let mut header = [0; 16];
    header[..8].copy_from_slice(&(place as u64).to_le_bytes());
    header[8..].copy_from_slice(&(record.len() as u64).to_le_bytes());
    header
}

/// One frame of a bucket: `(place, record, what follows)`, or `None` when it is cut short.
fn frame(bytes: &[u8]) -> Option<(usize, &[u8], &[u8])> {
    let number = |at: usize| -> Option<u64> {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    let place = usize::try_from(number(0)?).ok()?;
    let len = usize::try_from(number(8)?).ok()?;
    let record = bytes.get(16..16 + len)?;
    Some((place, record, &bytes[16 + len..]))
}

/// The requests of the episode of `execute`, read off its stored transcript with the
/// trace rebuilt from it — what the grader read.
fn off_transcript(
    study: &Study,
    payloads: &HashMap<String, String>,
    blobs: &BlobStore,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    execute: NodeIndex,
    compile: NodeIndex,
) -> Result<EpisodeRequests, NodeFailure> {
    let dag = &study.dag;
    let node = &dag.graph[execute];
    let payload: ExecutePayload = payloads
        .get(&*node.key)
        .ok_or_else(|| {
            NodeFailure::internal(format!(
                "the transcript of {} is not in the cache",
                node.id()
            ))
        })
        .and_then(|p| {
            super::rows::read(p).map_err(|detail| NodeFailure::StoredRowUnreadable {
                node: node.id(),
                detail,
            })
        })?;
    let variant = variants
        .get(&compile)
        .ok_or_else(|| NodeFailure::Upstream {
            node: dag.graph[compile].id(),
            cause: Box::new(NodeFailure::Compile {
                detail: "it did not compile in this apply".into(),
            }),
        })?;
    let trace = payload.transcript.trace(blobs, variant).ok_or_else(|| {
        NodeFailure::internal(format!(
            "the transcript of {} does not rebuild a trace",
            node.id()
        ))
    })?;
    requests::read(&payload.transcript, &trace, blobs)
        .map_err(|e| NodeFailure::internal(format!("{}: {e}", node.id())))
}

fn spill_io(path: &std::path::Path, e: &std::io::Error) -> NodeFailure {
    NodeFailure::io(format!("the request rows' spill {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbb_tables::levels::FinishReason;
    use tbb_tables::rows::RequestColumns;

    fn record(episode: &str, turns: u32) -> String {
        stored_requests::to_json(&EpisodeRequests {
            episode_key: episode.into(),
            requests: (0..turns)
                .map(|turn| RequestColumns {
                    turn,
                    visible_schemas: 8,
                    prompt_tokens: Some(100),
                    cached_tokens: Some(0),
                    completion_tokens: Some(10),
                    reasoning_tokens: None,
                    reasoning_source: None,
                    finish_reason: Some(FinishReason::Stop),
                    finish_reason_raw: Some("stop".into()),
                    response_kind: None,
                    executed_call: false,
                    cumulative_calls: 0,
                    attempts: Some(1),
                    infra_cause: None,
                    wall_ms: 1,
                    cumulative_tokens: 110,
                })
                .collect(),
        })
    }

    fn frames(records: &[(usize, String)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for (place, record) in records {
            bytes.extend_from_slice(&header(*place, record));
            bytes.extend_from_slice(record.as_bytes());
        }
        bytes
    }

    #[test]
    fn a_bucket_reads_back_in_place_order_whatever_the_order_appended_and_the_last_record_wins() {
        // Places 10..14 of a bucket from 10, appended out of order, 12 twice.
        let bytes = frames(&[
            (13, record("d", 1)),
            (12, record("c-old", 1)),
            (10, record("a", 2)),
            (12, record("c", 3)),
            (11, record("b", 1)),
        ]);
        let read = read_bucket(&bytes, 10, 5).unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<Option<(&str, usize)>> = read
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|r| (r.episode_key.as_str(), r.requests.len()))
            })
            .collect();
        assert_eq!(
            keys,
            [
                Some(("a", 2)),
                Some(("b", 1)),
                Some(("c", 3)),
                Some(("d", 1)),
                None
            ]
        );
    }

    #[test]
    fn a_bucket_cut_short_or_holding_another_buckets_episode_is_refused() {
        let mut bytes = frames(&[(0, record("a", 1))]);
        bytes.pop();
        assert_eq!(
            read_bucket(&bytes, 0, 1).err().as_deref(),
            Some("cut short")
        );
        let other = frames(&[(7, record("a", 1))]);
        assert_eq!(
            read_bucket(&other, 0, 4).err().as_deref(),
            Some("episode 7 is not this bucket's")
        );
    }
}
