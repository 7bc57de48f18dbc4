//! The committer of an apply: batches finished nodes into the cache in the order that
//! makes a killed run resumable.
//!
//! Owns the commit order: the objects the key inputs refer to before any node; an
//! episode's blobs and the record of its requests before the batch that lists it; an
//! execute node and its grade node in the same batch; a batch written every
//! [`Committer::NODES_PER_BATCH`] nodes or every [`Committer::INTERVAL`], and whenever
//! a stage ends. Anything not committed reruns next time, with the same result (every
//! episode is seeded from its key).
//!
//! Never: runs or orders nodes (the scheduler does), interprets a payload, or renders
//! progress.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use petgraph::graph::NodeIndex;
use serde::Serialize;

use super::cache::{Batch, Cache, CacheError, NewEntry};
use super::dag::Dag;

/// Pending nodes, blobs and objects, and when they were last committed.
#[derive(Debug)]
pub struct Committer {
    pending: Batch,
    /// Blob refs in `pending` (a blob several episodes share goes in once).
    pending_blobs: HashSet<String>,
    last: Instant,
}

impl Committer {
    /// Nodes that make a batch.
    pub const NODES_PER_BATCH: usize = 512;
    /// The longest a finished episode waits to be committed (its loss on a kill).
    pub const INTERVAL: Duration = Duration::from_secs(1);

    /// A committer whose first batch carries `objects` (those not yet in the cache).
    pub fn new(objects: Vec<(String, String)>) -> Committer {
        Committer {
            pending: Batch {
                objects,
                ..Batch::default()
            },
            pending_blobs: HashSet::new(),
            last: Instant::now(),
        }
    }

    /// Adds node `node` of `dag` with its payload.
    pub fn node<T: Serialize>(&mut self, dag: &Dag, node: NodeIndex, payload: &T) {
        self.pending.nodes.push(entry(dag, node, payload));
    }

    /// Adds node `node` of `dag`, whose payload is already JSON.
    pub fn node_json(&mut self, dag: &Dag, node: NodeIndex, payload: String) {
        self.pending.nodes.push(json_entry(dag, node, payload));
    }

    /// Adds a finished episode: its blobs the cache lacks, the record of its requests
    /// (`requests`, [`tbb_tables::stored_requests`]), then its execute node and its
    /// grade node together.
    pub fn episode<P: Serialize, R: Serialize>(
        &mut self,
        cache: &Cache,
        blobs: impl IntoIterator<Item = (String, String)>,
        requests: String,
        dag: &Dag,
        execute: (NodeIndex, &P),
        grade: (NodeIndex, &R),
    ) {
        for (r, text) in blobs {
            if !cache.has_blob(&r) && self.pending_blobs.insert(r.clone()) {
                self.pending.blobs.push((r, text));
            }
        }
        self.pending.requests.push((
            dag.graph[execute.0].key.to_string(),
            tbb_tables::stored_requests::LAYOUT.to_string(),
            requests,
        ));
        self.node(dag, execute.0, execute.1);
        self.node(dag, grade.0, grade.1);
    }

    /// Adds a played ToolSandbox scenario: its blobs, its scenario node's payload (the
    /// saved world and transcript) and its grade node's row. It has no request record:
    /// the requests table holds tbb's own episodes.
    pub fn scenario<P: Serialize, R: Serialize>(
        &mut self,
        cache: &Cache,
        blobs: impl IntoIterator<Item = (String, String)>,
        dag: &Dag,
        run: (NodeIndex, &P),
        grade: (NodeIndex, &R),
    ) {
        for (r, text) in blobs {
            if !cache.has_blob(&r) && self.pending_blobs.insert(r.clone()) {
                self.pending.blobs.push((r, text));
            }
        }
        self.node(dag, run.0, run.1);
        self.node(dag, grade.0, grade.1);
    }

    /// Commits when the batch is full or old enough.
    pub fn tick(&mut self, cache: &mut Cache) -> Result<(), CacheError> {
        if self.pending.nodes.len() >= Self::NODES_PER_BATCH
            || self.last.elapsed() >= Self::INTERVAL
        {
            self.flush(cache)?;
        }
        Ok(())
    }

    /// Whether everything handed over is committed (nothing is pending).
    pub fn all_committed(&self) -> bool {
        self.pending.is_empty()
    }

    /// Commits what is pending (nothing when nothing is).
    pub fn flush(&mut self, cache: &mut Cache) -> Result<(), CacheError> {
        cache.commit(std::mem::take(&mut self.pending))?;
        self.pending_blobs.clear();
        self.last = Instant::now();
        Ok(())
    }
}

/// The cache entry of node `node` of `dag` with its payload as JSON.
pub fn entry<T: Serialize>(dag: &Dag, node: NodeIndex, payload: &T) -> NewEntry {
    // Payloads are plain data with string keys: serialising cannot fail.
    json_entry(
        dag,
        node,
        serde_json::to_string(payload).unwrap_or_default(),
    )
}

/// The cache entry of node `node` of `dag` with `payload`, already JSON.
pub fn json_entry(dag: &Dag, node: NodeIndex, payload: String) -> NewEntry {
    let n = &dag.graph[node];
    NewEntry {
        kind: n.kind,
        id: n.id().into(),
        key: n.key.clone(),
        input: dag.key_input(node).full().canonical(),
        payload,
    }
}
