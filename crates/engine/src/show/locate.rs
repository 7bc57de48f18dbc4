//! Finding the episodes a `tbb show` command names: a prefix of its key (or of its
//! grade node's), or selectors on its identity. [`locate`] wants exactly one, and
//! several or no matches are errors that list candidates or say what was asked;
//! [`select`] (`--all`) takes every match, and only no match is an error.
//!
//! Never: reads the cache or a payload (the study's DAG alone answers).

use petgraph::graph::NodeIndex;

use crate::pipeline::dag::Work;
use crate::pipeline::key::NodeKind;
use crate::pipeline::Study;

use super::{ShowError, CANDIDATES, PAGE_PREFIX};

/// How to find an episode: a key prefix, or selectors on its identity.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// A prefix of the episode's key (or of its grade node's).
    pub prefix: Option<String>,
    /// `(identity field, value)`: `cfg`, `family`, `v`, `w`, `d`, `r`, `depth`,
    /// `block`, `arm`, `cap`, `rep`.
    pub fields: Vec<(&'static str, String)>,
}

/// The execute node of the one episode `selector` names.
pub fn locate(study: &Study, selector: &Selector) -> Result<NodeIndex, ShowError> {
    if selector.prefix.is_none() && selector.fields.is_empty() {
        return Err(ShowError::Nothing {
            manifest: study.manifest.path.display().to_string(),
        });
    }
    let matching = select(study, selector)?;
    match matching.as_slice() {
        [one] => Ok(*one),
        _ if selector.fields.is_empty() => Err(ShowError::AmbiguousPrefix {
            prefix: selector.prefix.clone().unwrap_or_default(),
            count: matching.len(),
            candidates: candidates(study, &matching),
        }),
        _ => Err(ShowError::ManyMatch {
            selection: selection(selector),
            count: matching.len(),
            candidates: candidates(study, &matching),
        }),
    }
}

/// The execute nodes of every episode `selector` names, in the study's order: every
/// episode of the study when it names none.
pub fn select(study: &Study, selector: &Selector) -> Result<Vec<NodeIndex>, ShowError> {
    let executes: Vec<(NodeIndex, Option<NodeIndex>)> = study
        .dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Execute)
        .map(|(i, _)| (i, study.dag.grade_of(i)))
        .collect();
    let mut matching: Vec<NodeIndex> = executes.iter().map(|(i, _)| *i).collect();
    if let Some(prefix) = &selector.prefix {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(ShowError::BadPrefix { prefix });
        }
        matching = executes
            .iter()
            .filter(|(e, g)| {
                study.dag.graph[*e].key.starts_with(&prefix)
                    || g.is_some_and(|g| study.dag.graph[g].key.starts_with(&prefix))
            })
            .map(|(e, _)| *e)
            .collect();
        if matching.is_empty() {
            return Err(ShowError::UnknownPrefix {
                study: study.manifest.study.clone(),
                prefix,
            });
        }
    }
    for (name, value) in &selector.fields {
        let before = matching.clone();
        matching.retain(|&e| field(study, e, name).is_some_and(|v| v == *value));
        if matching.is_empty() {
            let mut seen: Vec<String> = before
                .iter()
                .filter_map(|&e| field(study, e, name))
                .collect();
            seen.sort();
            seen.dedup();
            let help = match tbb_core::family::closest(value, seen.iter().map(String::as_str)) {
                Some(s) if seen.len() > 1 => format!("did you mean {name}={s}?"),
                _ => format!(
                    "{name} is one of: {}",
                    if seen.is_empty() {
                        "(none)".to_string()
                    } else {
                        seen.join(", ")
                    }
                ),
            };
            return Err(ShowError::NoMatch {
                study: study.manifest.study.clone(),
                selection: selection(selector),
                help,
            });
        }
    }
    Ok(matching)
}

fn selection(selector: &Selector) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = &selector.prefix {
        parts.push(format!("key={p}…"));
    }
    parts.extend(selector.fields.iter().map(|(k, v)| format!("{k}={v}")));
    parts.join(", ")
}

/// The value of an identity field of an execute node; `block` also when the manifest
/// has one block (the identity then leaves it out).
fn field(study: &Study, execute: NodeIndex, name: &str) -> Option<String> {
    let node = &study.dag.graph[execute];
    if let Some(v) = node.fields.get(name) {
        return Some(v.to_string());
    }
    match (name, &node.work) {
        ("block", Work::Execute { block, .. }) => {
            study.manifest.blocks.get(*block).map(|b| b.name.clone())
        }
        _ => None,
    }
}

fn candidates(study: &Study, nodes: &[NodeIndex]) -> String {
    let mut lines: Vec<String> = nodes
        .iter()
        .take(CANDIDATES)
        .map(|&n| {
            let node = &study.dag.graph[n];
            format!(
                "  {}  {}",
                &node.key[..PAGE_PREFIX.min(node.key.len())],
                node.id()
            )
        })
        .collect();
    if nodes.len() > CANDIDATES {
        lines.push(format!("  … and {} more", nodes.len() - CANDIDATES));
    }
    lines.join("\n")
}
