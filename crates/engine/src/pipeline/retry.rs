//! `tbb apply --retry-infra`: rerunning exactly the episodes that ended as
//! infrastructure failures, as the user's explicit choice.
//!
//! An infrastructure failure is a failure of its configuration (the paper keeps it as
//! one), so nothing reruns it by itself: its execute node is cached like any other. A
//! retry is recorded in the lockfile (`[[retry]]`: the node's identity, its key at its
//! first attempt, and the attempt now due), and the DAG reads the record back
//! ([`attempts`]): an execute node whose first-attempt key has a record takes
//! `attempt` into its key input, so it reruns once, under a key of its own, and stays
//! cached under that key on every later plan, apply, certify and reproduce. Nodes
//! without a record keep their keys, so their episodes and seeds do not change; the
//! episode key (what the episode is, and its seed) is the same at every attempt.
//!
//! A record whose first-attempt key no longer occurs in the DAG (the manifest or a
//! family changed) is dropped when the next retry is recorded.
//!
//! Never: decides to retry. Only `--retry-infra` adds records.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::dag::Work;
use super::key::NodeKind;
use super::{cache::Cache, PipelineError, Study};
use tbb_tables::EpisodeRow;

/// One retried episode, as the lockfile records it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Retry {
    /// Its execute node's identity (for the reader: the key below is what counts).
    pub node: String,
    /// The execute node's key at the episode's first attempt.
    pub first_key: String,
    /// The attempt the episode runs (and its row records): 2 after one retry.
    pub attempt: u32,
}

/// The retries the lockfile at `path` records; none when it is missing or unreadable
/// (a lockfile is tbb's to write; `--locked` refuses one that differs).
pub fn recorded(path: &Path) -> Vec<Retry> {
    #[derive(Deserialize)]
    struct Lock {
        #[serde(default)]
        retry: Vec<Retry>,
    }
    tbb_diag::input::read_text(path, tbb_diag::input::MAX_DATA_BYTES)
        .ok()
        .and_then(|text| toml::from_str::<Lock>(&text).ok())
        .map(|lock| lock.retry)
        .unwrap_or_default()
}

/// The attempt due for each first-attempt key with a record.
pub fn attempts(retries: &[Retry]) -> HashMap<String, u32> {
    retries
        .iter()
        .map(|r| (r.first_key.clone(), r.attempt))
        .collect()
}

/// The retries after this `--retry-infra`: every execute node of the study whose
/// cached episode ended as an infrastructure failure gets its next attempt; the
/// records of the other nodes in the DAG are kept, and records of nodes no longer in
/// it are dropped. Returns the new records and how many episodes they rerun.
pub fn next(study: &Study, cache: &Cache) -> Result<(Vec<Retry>, usize), PipelineError> {
    let grades: Vec<(&str, petgraph::graph::NodeIndex)> = study
        .dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Grade)
        .filter_map(|(_, n)| match n.work {
            Work::Grade { execute, .. } => Some((n.key.as_ref(), execute)),
            _ => None,
        })
        .collect();
    let keys: Vec<&str> = grades.iter().map(|(k, _)| *k).collect();
    let mut failed = std::collections::HashSet::new();
    cache.for_each_payload(&keys, &mut |key, payload| {
        if super::rows::read::<EpisodeRow>(payload).is_ok_and(|row| row.infra_failure) {
            failed.insert(key.to_string());
        }
        Ok(())
    })?;
    let previous = &study.retries;
    let mut out = Vec::new();
    let mut rerun = 0;
    for (grade_key, execute) in grades {
        let node = &study.dag.graph[execute];
        let Work::Execute { attempt, .. } = node.work else {
            continue;
        };
        let first_key = if attempt > 1 {
            previous
                .iter()
                .find(|r| r.node == node.id() && r.attempt == attempt)
                .map(|r| r.first_key.clone())
        } else {
            Some(node.key.to_string())
        };
        let Some(first_key) = first_key else {
            continue;
        };
        if failed.contains(grade_key) {
            rerun += 1;
            out.push(Retry {
                node: node.id(),
                first_key,
                attempt: attempt + 1,
            });
        } else if attempt > 1 {
            out.push(Retry {
                node: node.id(),
                first_key,
                attempt,
            });
        }
    }
    out.sort();
    out.dedup();
    Ok((out, rerun))
}
