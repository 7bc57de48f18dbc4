//! The world of one ToolSandbox episode: a table per namespace that keeps every snapshot.
//!
//! Upstream's `ExecutionContext` keeps, per namespace, one data frame holding the whole
//! history: each row carries `sandbox_message_index`, the message whose processing
//! produced the snapshot the row belongs to. A change to a non-conversation namespace
//! first copies the latest snapshot to the index of the message being processed
//! (`max_sandbox_message_index + 1`) and then edits that copy, so the state at any point
//! of the conversation can be read back. Every snapshot starts with a *headguard*, a row
//! whose columns other than the index are all null, so an empty snapshot still exists.
//! The conversation itself lives in the `SANDBOX` namespace, one row per message.
//!
//! This module owns that structure and its four operations (read a snapshot, add, remove,
//! replace). It must never decide what a tool does or how a snapshot is graded: the
//! tools and the evaluator are built on it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The column every table has: which message's processing made the snapshot.
pub const INDEX: &str = "sandbox_message_index";

/// One row: column name to value (`null` for upstream's `None`).
pub type Row = Map<String, Value>;

/// A namespace of the world (upstream's `DatabaseNamespace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Namespace {
    /// The conversation: one row per message between the roles.
    Sandbox,
    /// The device's settings (one row).
    Setting,
    /// The contact book.
    Contact,
    /// Sent and received messages.
    Messaging,
    /// Reminders.
    Reminder,
}

impl Namespace {
    /// Every namespace, in upstream's order.
    pub const ALL: [Namespace; 5] = [
        Namespace::Sandbox,
        Namespace::Setting,
        Namespace::Contact,
        Namespace::Messaging,
        Namespace::Reminder,
    ];

    /// Upstream's name (`SANDBOX`, `SETTING`, …).
    pub fn name(self) -> &'static str {
        match self {
            Namespace::Sandbox => "SANDBOX",
            Namespace::Setting => "SETTING",
            Namespace::Contact => "CONTACT",
            Namespace::Messaging => "MESSAGING",
            Namespace::Reminder => "REMINDER",
        }
    }

    /// The namespace's columns in upstream's schema order, [`INDEX`] first.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            Namespace::Sandbox => &[
                INDEX,
                "sender",
                "recipient",
                "content",
                "openai_tool_call_id",
                "openai_function_name",
                "conversation_active",
                "tool_call_exception",
                "tool_trace",
                "visible_to",
            ],
            Namespace::Setting => &[
                INDEX,
                "device_id",
                "cellular",
                "wifi",
                "location_service",
                "low_battery_mode",
                "latitude",
                "longitude",
            ],
            Namespace::Contact => &[
                INDEX,
                "person_id",
                "name",
                "phone_number",
                "relationship",
                "is_self",
            ],
            Namespace::Messaging => &[
                INDEX,
                "message_id",
                "sender_person_id",
                "sender_phone_number",
                "recipient_person_id",
                "recipient_phone_number",
                "content",
                "creation_timestamp",
            ],
            Namespace::Reminder => &[
                INDEX,
                "reminder_id",
                "content",
                "creation_timestamp",
                "reminder_timestamp",
                "latitude",
                "longitude",
            ],
        }
    }
}

/// The type of a column (upstream's polars schema), which decides how a value is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// `pl.Int32` (the index).
    Int,
    /// `pl.Float64`: an integer written here is stored as a float, as polars casts it.
    Float,
    /// `pl.Boolean`.
    Bool,
    /// `pl.String` or `pl.Enum` of role names.
    Text,
    /// `pl.List(...)`: `tool_trace` and `visible_to`.
    List,
}

impl Namespace {
    /// The kind of one of the namespace's columns, or `None` if it has no such column.
    pub fn column_kind(self, column: &str) -> Option<ColumnKind> {
        if !self.columns().contains(&column) {
            return None;
        }
        Some(match column {
            INDEX => ColumnKind::Int,
            "latitude" | "longitude" | "creation_timestamp" | "reminder_timestamp" => {
                ColumnKind::Float
            }
            "conversation_active"
            | "cellular"
            | "wifi"
            | "location_service"
            | "low_battery_mode"
            | "is_self" => ColumnKind::Bool,
            "tool_trace" | "visible_to" => ColumnKind::List,
            _ => ColumnKind::Text,
        })
    }
}

/// What the world refuses (upstream raises the same conditions).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContextError {
    /// A row names a column its namespace does not have.
    #[error("{namespace:?} has no column `{column}`")]
    UnknownColumn {
        /// The namespace written to.
        namespace: Namespace,
        /// The column it does not have.
        column: String,
    },
    /// A row whose columns are all null: that shape is reserved for the headguard.
    #[error(
        "a row added to {0:?} has every column null; that shape is reserved for the headguard"
    )]
    AllNull(Namespace),
    /// A value does not fit its column's type (polars refuses to build the frame).
    #[error("{namespace:?}.{column} cannot hold {value}")]
    WrongType {
        /// The namespace written to.
        namespace: Namespace,
        /// The column.
        column: String,
        /// The value refused.
        value: Value,
    },
    /// A removal matched no row of the current snapshot (upstream's `NoDataError`).
    #[error("no row of {0:?} matches")]
    NoData(Namespace),
    /// The conversation cannot lose messages.
    #[error("rows cannot be removed from SANDBOX")]
    RemoveFromSandbox,
    /// A snapshot was asked for beyond the message being processed.
    #[error("message {asked} is beyond the next message, {next}")]
    BeyondNext {
        /// The index asked for.
        asked: i64,
        /// `max_sandbox_message_index + 1`.
        next: i64,
    },
}

/// The world: every namespace's table with its whole history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Context {
    tables: BTreeMap<Namespace, Vec<Row>>,
}

fn index_of(row: &Row) -> i64 {
    row.get(INDEX).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether a row is a headguard: every column but the index is null (or absent).
pub fn is_headguard(row: &Row) -> bool {
    row.iter().all(|(k, v)| k == INDEX || v.is_null())
}

/// A headguard as upstream's frame holds it: every column null but the index.
fn headguard(ns: Namespace, index: i64) -> Row {
    let mut row: Row = ns
        .columns()
        .iter()
        .map(|c| ((*c).to_owned(), Value::Null))
        .collect();
    row.insert(INDEX.into(), Value::from(index));
    row
}

impl Context {
    /// A world from each namespace's stored table (history and headguards included, as
    /// the scenario file or a saved episode holds them). A namespace that is missing
    /// starts as one headguard at message 0.
    pub fn from_tables(mut tables: BTreeMap<Namespace, Vec<Row>>) -> Context {
        for ns in Namespace::ALL {
            let table = tables.entry(ns).or_default();
            if table.is_empty() {
                table.push(headguard(ns, 0));
            }
        }
        Context { tables }
    }

    /// Each namespace's whole table: the saved state of an episode.
    pub fn tables(&self) -> &BTreeMap<Namespace, Vec<Row>> {
        &self.tables
    }

    fn table(&self, ns: Namespace) -> &[Row] {
        self.tables.get(&ns).map_or(&[], Vec::as_slice)
    }

    fn table_mut(&mut self, ns: Namespace) -> &mut Vec<Row> {
        self.tables.entry(ns).or_default()
    }

    /// The index of the last message, or −1 before the first.
    pub fn max_sandbox_message_index(&self) -> i64 {
        self.table(Namespace::Sandbox)
            .iter()
            .filter(|r| !is_headguard(r))
            .map(index_of)
            .max()
            .unwrap_or(-1)
    }

    /// The index of the first message the user sent that is not one of the user
    /// simulator's few-shot examples (those are visible to the user alone), or −1. The
    /// snapshot there is the episode's starting world.
    pub fn first_user_sandbox_message_index(&self) -> i64 {
        self.table(Namespace::Sandbox)
            .iter()
            .filter(|r| !is_headguard(r))
            .find(|r| {
                r.get("sender").and_then(Value::as_str) == Some("USER")
                    && !is_visible_to_user_alone(r.get("visible_to"))
            })
            .map_or(-1, index_of)
    }

    /// The index of the latest snapshot of `ns` made no later than `query`; −1 if the
    /// namespace holds nothing but headguards, and the first snapshot if every snapshot
    /// is later than `query`.
    pub fn most_recent_snapshot_index(
        &self,
        ns: Namespace,
        query: i64,
    ) -> Result<i64, ContextError> {
        let table = self.table(ns);
        if table.iter().all(is_headguard) {
            return Ok(-1);
        }
        let next = self.max_sandbox_message_index() + 1;
        if query > next {
            return Err(ContextError::BeyondNext { asked: query, next });
        }
        let mut indices: Vec<i64> = table.iter().map(index_of).collect();
        indices.sort_unstable();
        indices.dedup();
        let at = indices.partition_point(|&i| i <= query);
        Ok(indices[at.saturating_sub(1)])
    }

    /// A snapshot of `ns`: the latest made no later than `at` (by default, the one the
    /// message being processed reads), without the index column or the headguard. With
    /// `all_history`, every snapshot up to it, each row keeping its index.
    pub fn get_database(
        &self,
        ns: Namespace,
        at: Option<i64>,
        all_history: bool,
    ) -> Result<Vec<Row>, ContextError> {
        let at = at.unwrap_or_else(|| self.max_sandbox_message_index() + 1);
        let target = self.most_recent_snapshot_index(ns, at)?;
        Ok(self
            .table(ns)
            .iter()
            .filter(|r| {
                let i = index_of(r);
                if all_history {
                    i <= target
                } else {
                    i == target
                }
            })
            .filter(|r| !is_headguard(r))
            .map(|r| {
                let mut r = r.clone();
                if !all_history {
                    r.remove(INDEX);
                }
                r
            })
            .collect())
    }

    fn check_columns(ns: Namespace, row: &Row) -> Result<(), ContextError> {
        let columns = ns.columns();
        if let Some(column) = row.keys().find(|k| !columns.contains(&k.as_str())) {
            return Err(ContextError::UnknownColumn {
                namespace: ns,
                column: column.clone(),
            });
        }
        if is_headguard(row) {
            return Err(ContextError::AllNull(ns));
        }
        Ok(())
    }

    /// The row as upstream's frame holds it: every column of the schema present (null
    /// where not given) and every value of its column's type (integers in float columns
    /// become floats, so `1711126800` and `1711126800.0` are one value, as in polars).
    fn normalize(ns: Namespace, mut row: Row) -> Result<Row, ContextError> {
        for &column in ns.columns() {
            let value = row.entry(column).or_insert(Value::Null);
            let fits = match (ns.column_kind(column), &*value) {
                (_, Value::Null) => true,
                (Some(ColumnKind::Float), Value::Number(n)) => {
                    if let Some(f) = n.as_f64() {
                        *value = Value::from(f);
                    }
                    true
                }
                (Some(ColumnKind::Int), Value::Number(n)) => n.is_i64() || n.is_u64(),
                (Some(ColumnKind::Bool), Value::Bool(_)) => true,
                (Some(ColumnKind::Text), Value::String(_)) => true,
                (Some(ColumnKind::List), Value::Array(_)) => true,
                _ => false,
            };
            if !fits {
                return Err(ContextError::WrongType {
                    namespace: ns,
                    column: column.to_owned(),
                    value: value.clone(),
                });
            }
        }
        Ok(row)
    }

    /// Copies the latest snapshot of `ns` to the message being processed, unless that
    /// message already has one.
    fn snapshot_for_next_message(&mut self, ns: Namespace) -> i64 {
        let max = self.max_sandbox_message_index();
        let next = max + 1;
        let table = self.table(ns);
        if !table.iter().any(|r| index_of(r) == next) {
            // `max` is never beyond the next message, so this cannot fail. A namespace of
            // nothing but headguards answers −1, which no row has: as upstream, nothing
            // is copied and the new rows stand without a headguard of their own.
            let latest = self.most_recent_snapshot_index(ns, max).unwrap_or(-1);
            let copy: Vec<Row> = table
                .iter()
                .filter(|r| index_of(r) == latest)
                .map(|r| {
                    let mut r = r.clone();
                    r.insert(INDEX.into(), Value::from(next));
                    r
                })
                .collect();
            self.table_mut(ns).extend(copy);
        }
        next
    }

    /// Adds rows. To a namespace other than `SANDBOX` they go into the snapshot of the
    /// message being processed (made first if need be); to `SANDBOX` each row is a new
    /// message with the next index, carrying `conversation_active` over from the message
    /// before when it has none.
    pub fn add_to_database(&mut self, ns: Namespace, rows: Vec<Row>) -> Result<(), ContextError> {
        for row in &rows {
            Self::check_columns(ns, row)?;
        }
        let rows = rows
            .into_iter()
            .map(|r| Self::normalize(ns, r))
            .collect::<Result<Vec<_>, _>>()?;
        if ns == Namespace::Sandbox {
            let mut active = self
                .get_database(Namespace::Sandbox, None, false)?
                .last()
                .and_then(|r| r.get("conversation_active").cloned())
                .filter(|v| !v.is_null())
                .unwrap_or(Value::Bool(true));
            let first = self.max_sandbox_message_index() + 1;
            for (index, mut row) in (first..).zip(rows) {
                row.insert(INDEX.into(), Value::from(index));
                match row.get("conversation_active") {
                    Some(v) if !v.is_null() => active = v.clone(),
                    _ => {
                        row.insert("conversation_active".into(), active.clone());
                    }
                }
                self.table_mut(ns).push(row);
            }
        } else {
            let next = self.snapshot_for_next_message(ns);
            for mut row in rows {
                row.insert(INDEX.into(), Value::from(next));
                self.table_mut(ns).push(row);
            }
        }
        Ok(())
    }

    /// Removes the rows of the snapshot being made that `matches` selects (never the
    /// headguard); refuses when none matches, and refuses `SANDBOX`.
    pub fn remove_from_database(
        &mut self,
        ns: Namespace,
        matches: impl Fn(&Row) -> bool,
    ) -> Result<(), ContextError> {
        if ns == Namespace::Sandbox {
            return Err(ContextError::RemoveFromSandbox);
        }
        let next = self.snapshot_for_next_message(ns);
        let hit = |r: &Row| index_of(r) == next && !is_headguard(r) && matches(r);
        if !self.table(ns).iter().any(hit) {
            return Err(ContextError::NoData(ns));
        }
        self.table_mut(ns).retain(|r| !hit(r));
        Ok(())
    }

    /// Replaces the snapshot being made (for `SANDBOX`: the last message's snapshot)
    /// with `rows`, headguard first.
    pub fn update_database(&mut self, ns: Namespace, rows: Vec<Row>) -> Result<(), ContextError> {
        let index = if ns == Namespace::Sandbox {
            self.max_sandbox_message_index()
        } else {
            self.snapshot_for_next_message(ns)
        };
        let mut replacement = vec![headguard(ns, index)];
        for mut row in rows {
            row.remove(INDEX);
            if is_headguard(&row) {
                continue;
            }
            Self::check_columns(ns, &row)?;
            let mut row = Self::normalize(ns, row)?;
            row.insert(INDEX.into(), Value::from(index));
            replacement.push(row);
        }
        let table = self.table_mut(ns);
        table.retain(|r| index_of(r) != index);
        table.extend(replacement);
        Ok(())
    }
}

/// Whether `visible_to` is exactly `["USER"]` (upstream's few-shot examples).
fn is_visible_to_user_alone(visible_to: Option<&Value>) -> bool {
    matches!(visible_to.and_then(Value::as_array), Some(v) if v.len() == 1 && v[0] == "USER")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test rows are objects"),
        }
    }

    /// A row as the world stores it: every column of `ns`, null where not given.
    fn full(ns: Namespace, v: Value) -> Row {
        let mut r = row(v);
        for c in ns.columns() {
            r.entry(*c).or_insert(Value::Null);
        }
        r.remove(INDEX);
        r
    }

    fn world() -> Context {
        let mut tables = BTreeMap::new();
        tables.insert(
            Namespace::Sandbox,
            vec![
                headguard(Namespace::Sandbox, 0),
                row(json!({INDEX: 0, "sender": "SYSTEM", "recipient": "AGENT", "content": "be careful"})),
                row(json!({INDEX: 1, "sender": "USER", "recipient": "AGENT", "content": "few-shot", "visible_to": ["USER"]})),
                row(json!({INDEX: 2, "sender": "USER", "recipient": "AGENT", "content": "turn off wifi"})),
            ],
        );
        tables.insert(
            Namespace::Setting,
            vec![
                headguard(Namespace::Setting, 0),
                row(json!({INDEX: 0, "wifi": true, "cellular": true})),
            ],
        );
        Context::from_tables(tables)
    }

    #[test]
    fn indices_of_the_conversation() {
        let w = world();
        assert_eq!(w.max_sandbox_message_index(), 2);
        assert_eq!(w.first_user_sandbox_message_index(), 2);
        assert_eq!(w.most_recent_snapshot_index(Namespace::Contact, 2), Ok(-1));
        assert_eq!(
            w.most_recent_snapshot_index(Namespace::Setting, 9),
            Err(ContextError::BeyondNext { asked: 9, next: 3 })
        );
    }

    #[test]
    fn a_change_copies_the_latest_snapshot_to_the_next_message_and_keeps_the_old_one() {
        let mut w = world();
        w.update_database(
            Namespace::Setting,
            vec![row(json!({"wifi": false, "cellular": true}))],
        )
        .unwrap();
        let now = w.get_database(Namespace::Setting, None, false).unwrap();
        assert_eq!(
            now,
            vec![full(
                Namespace::Setting,
                json!({"wifi": false, "cellular": true})
            )]
        );
        let before = w.get_database(Namespace::Setting, Some(2), false).unwrap();
        assert_eq!(before, vec![row(json!({"wifi": true, "cellular": true}))]);
        // Both snapshots have their headguard.
        let guards = w.tables()[&Namespace::Setting]
            .iter()
            .filter(|r| is_headguard(r))
            .count();
        assert_eq!(guards, 2);
    }

    #[test]
    fn adding_to_an_empty_namespace_and_removing_again() {
        let mut w = world();
        let bart = row(json!({"person_id": "p1", "name": "Bart"}));
        w.add_to_database(Namespace::Contact, vec![bart.clone()])
            .unwrap();
        assert_eq!(
            w.get_database(Namespace::Contact, None, false).unwrap(),
            vec![full(Namespace::Contact, Value::Object(bart))]
        );
        // As upstream, a namespace of headguards only gets no headguard copied to the
        // new snapshot.
        let at_next = w.tables()[&Namespace::Contact]
            .iter()
            .filter(|r| r[INDEX] == 3)
            .count();
        assert_eq!(at_next, 1);
        assert_eq!(
            w.remove_from_database(Namespace::Contact, |r| r["name"] == "Lisa"),
            Err(ContextError::NoData(Namespace::Contact))
        );
        w.remove_from_database(Namespace::Contact, |r| r["name"] == "Bart")
            .unwrap();
        assert!(w
            .get_database(Namespace::Contact, None, false)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn messages_take_the_next_indices_and_carry_the_conversation_state() {
        let mut w = world();
        w.add_to_database(
            Namespace::Sandbox,
            vec![
                row(json!({"sender": "AGENT", "recipient": "USER", "content": "done", "conversation_active": false})),
                row(json!({"sender": "USER", "recipient": "AGENT", "content": "bye"})),
            ],
        )
        .unwrap();
        let all = w.get_database(Namespace::Sandbox, None, true).unwrap();
        let last = all.last().unwrap();
        assert_eq!(last[INDEX], 4);
        assert_eq!(last["conversation_active"], false);
    }

    #[test]
    fn integers_in_float_columns_are_stored_as_floats() {
        let mut w = world();
        w.add_to_database(
            Namespace::Reminder,
            vec![row(
                json!({"content": "x", "reminder_timestamp": 1711126800}),
            )],
        )
        .unwrap();
        let r = &w.get_database(Namespace::Reminder, None, false).unwrap()[0];
        assert!(r["reminder_timestamp"].is_f64());
        assert_eq!(r["reminder_timestamp"], 1711126800.0);
        assert!(matches!(
            w.add_to_database(Namespace::Reminder, vec![row(json!({"content": 5}))]),
            Err(ContextError::WrongType { .. })
        ));
    }

    #[test]
    fn bad_rows_are_refused() {
        let mut w = world();
        assert!(matches!(
            w.add_to_database(Namespace::Contact, vec![row(json!({"colour": "red"}))]),
            Err(ContextError::UnknownColumn { .. })
        ));
        assert_eq!(
            w.add_to_database(Namespace::Contact, vec![row(json!({"name": null}))]),
            Err(ContextError::AllNull(Namespace::Contact))
        );
        assert_eq!(
            w.remove_from_database(Namespace::Sandbox, |_| true),
            Err(ContextError::RemoveFromSandbox)
        );
    }
}
