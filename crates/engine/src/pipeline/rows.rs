//! The rows the cache stores, one type per node kind, and the version of each one's
//! layout.
//!
//! Every committed node stores one row (its payload, JSON): a compile node a
//! [`CompilePayload`], an execute node an [`ExecutePayload`], a grade node an
//! [`EpisodeRow`], a scenario node a [`super::scenarios::ScenarioPayload`], a scenario
//! grade node a [`tbb_tables::ScenarioEpisodeRow`], an analysis node an [`AnalysisPayload`] (whose tables sit beside it as
//! Parquet), a table node a [`TablePayload`]. Each type carries a `ROW_VERSION`
//! constant beside its definition, and [`row_version`] puts it into the key of every node
//! of its kind ([`super::key::KeyInput::new`]): bumping it reruns every node of that kind
//! with the reason "stored row layout 1 -> 2" instead of leaving rows that no longer
//! deserialise in place. Version 1 adds nothing to a key, so the keys of the rows written
//! before versions existed are unchanged (and so are the tables and lockfiles that
//! record them).
//!
//! A row that does not deserialise anyway (a layout change without a bump, a damaged
//! or hand-edited cache) is found by the plan ([`unreadable`]) and rerun with its reason
//! — never handed to its dependants as a failure.
//!
//! Never: decides what a row holds (the stages that write them do).

use super::key::NodeKind;
use super::publish::AnalysisPayload;
use super::{CompilePayload, ExecutePayload, TablePayload};
use tbb_tables::rows::EpisodeRow;

/// The layout version of the row a node of `kind` stores.
pub fn row_version(kind: NodeKind) -> u32 {
    match kind {
        NodeKind::Compile => CompilePayload::ROW_VERSION,
        NodeKind::Execute => ExecutePayload::ROW_VERSION,
        NodeKind::Grade => EpisodeRow::ROW_VERSION,
        NodeKind::Scenario => super::scenarios::ScenarioPayload::ROW_VERSION,
        NodeKind::ScenarioGrade => tbb_tables::ScenarioEpisodeRow::ROW_VERSION,
        NodeKind::Analysis => AnalysisPayload::ROW_VERSION,
        NodeKind::Table => TablePayload::ROW_VERSION,
    }
}

/// Reads a stored row of type `T` (one of the row types above); the error is serde's,
/// naming what does not fit (``missing field `vts` ``), without its position in the
/// row: rows unreadable for one reason then read alike, and a plan lists them as one
/// group instead of one group per column the field happened to sit at.
pub fn read<T: serde::de::DeserializeOwned>(payload: &str) -> Result<T, String> {
    serde_json::from_str(payload).map_err(|e| {
        let text = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        text.strip_suffix(&position).unwrap_or(&text).to_string()
    })
}

/// The stored rows of `grades` (grade nodes of `dag`: an [`EpisodeRow`] each, or a
/// [`tbb_tables::ScenarioEpisodeRow`] for scenario grade nodes), each parsed as it is
/// read ([`read`]), so that the payloads are never all held as text (at four repeats of
/// the capacity study they were 91 MB). A grade node the cache lacks has no entry.
pub fn stored_rows<Row: serde::de::DeserializeOwned>(
    cache: &super::cache::Cache,
    dag: &super::Dag,
    grades: impl Iterator<Item = petgraph::graph::NodeIndex>,
) -> Result<
    std::collections::HashMap<petgraph::graph::NodeIndex, Result<Row, String>>,
    super::cache::CacheError,
> {
    let by_key: std::collections::HashMap<&str, petgraph::graph::NodeIndex> =
        grades.map(|g| (dag.graph[g].key.as_ref(), g)).collect();
    let keys: Vec<&str> = by_key.keys().copied().collect();
    let mut rows = std::collections::HashMap::with_capacity(keys.len());
    cache.for_each_payload(&keys, &mut |key, payload| {
        if let Some(&g) = by_key.get(key) {
            rows.insert(g, read(payload));
        }
        Ok(())
    })?;
    Ok(rows)
}

/// Why the stored row `payload` of a node of `kind` cannot be read as that kind's row
/// type, if it cannot.
pub fn unreadable(kind: NodeKind, payload: &str) -> Option<String> {
    match kind {
        NodeKind::Compile => read::<CompilePayload>(payload).err(),
        NodeKind::Execute => read::<ExecutePayload>(payload).err(),
        NodeKind::Grade => read::<EpisodeRow>(payload).err(),
        NodeKind::Scenario => read::<super::scenarios::ScenarioPayload>(payload).err(),
        NodeKind::ScenarioGrade => read::<tbb_tables::ScenarioEpisodeRow>(payload).err(),
        NodeKind::Analysis => read::<AnalysisPayload>(payload).err(),
        NodeKind::Table => read::<TablePayload>(payload).err(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_row_type_of_its_version() {
        for kind in NodeKind::ALL {
            assert!(row_version(kind) >= 1, "{kind:?}");
        }
        assert_eq!(row_version(NodeKind::Grade), EpisodeRow::ROW_VERSION);
    }

    #[test]
    fn a_row_missing_a_field_is_unreadable_with_serde_naming_the_field() {
        let table = serde_json::json!({ "files": ["a.parquet"] }).to_string();
        assert_eq!(unreadable(NodeKind::Table, &table), None);
        let why = unreadable(NodeKind::Table, "{}").unwrap_or_default();
        assert_eq!(why, "missing field `files`");
        let why = unreadable(NodeKind::Table, "{\n \"files\": 3}").unwrap_or_default();
        assert_eq!(why, "invalid type: integer `3`, expected a sequence");
        assert!(unreadable(NodeKind::Grade, "{\"study\":\"s\"}").is_some());
    }
}
