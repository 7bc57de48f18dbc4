//! Node keys and the reasons a node reruns.
//!
//! A node's key is blake3 over the canonical JSON of its [`KeyInput`]. What goes into
//! each kind's key input (the habit of cargo's fingerprint docs):
//!
//! | kind | version | params | files | objects | inputs |
//! |---|---|---|---|---|---|
//! | compile | `compile::CODE_VERSION` | cell levels | the family's content hash | — | — |
//! | execute | `harness::CODE_VERSION` | lane, repair, cap, budget, repeat; the attempt once `--retry-infra` reran it | system prompt, nudge | the configuration (all but concurrency and enablement) | compile |
//! | grade | `grade::CODE_VERSION` | episode budget | — | — | execute, compile |
//! | scenario | `toolsandbox-episode/1` (+ the panel's versions for a simulated configuration) | scenario, cap, budget, repeat, study | the vendored scenarios' pin, nudge | the configuration; a live user's | — |
//! | scenario_grade | `evaluation::CODE_VERSION` | — | — | — | scenario |
//! | analysis | per kind, `+analysis/2` | its parameters | another study's table (blake3) | — | what its kind declares: episodes, variants, other analyses |
//! | table | `dag::versions::TABLE` (`EPISODES`, `REQUESTS`, `VARIANTS` for those) | the study name (episodes, requests) | manifest, lockfile (provenance) | — | what it publishes |
//!
//! The key input is stored beside every result, so that a changed key can be explained
//! by diffing the two inputs ([`diff`]); large inputs (configurations) enter as the hash
//! of an *object* kept once in the cache, and are diffed field by field.
//!
//! Never: hashes `Debug` strings, `HashMap` order or modification times. Maps are
//! `BTreeMap`s; floats are serialised by `serde_json` (shortest round-trip form, so
//! equal bits give equal text).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of node, in stage order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// (family, cell) -> variant.
    Compile,
    /// (variant, configuration, lane, repair, cap, repeat) -> transcript.
    Execute,
    /// transcript -> verdict and episode row.
    Grade,
    /// (ToolSandbox scenario, configuration, cap, repeat) -> transcript and saved world.
    Scenario,
    /// saved world -> ToolSandbox's grade and the scenario's row.
    ScenarioGrade,
    /// episodes -> analysis tables.
    Analysis,
    /// Publishes a table under `outputs/<study>/`.
    Table,
}

impl NodeKind {
    /// Every kind, in stage order.
    pub const ALL: [NodeKind; 7] = [
        NodeKind::Compile,
        NodeKind::Execute,
        NodeKind::Grade,
        NodeKind::Scenario,
        NodeKind::ScenarioGrade,
        NodeKind::Analysis,
        NodeKind::Table,
    ];

    /// Lower-case name, as in node identities.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Compile => "compile",
            NodeKind::Execute => "execute",
            NodeKind::Grade => "grade",
            NodeKind::Scenario => "scenario",
            NodeKind::ScenarioGrade => "scenario_grade",
            NodeKind::Analysis => "analysis",
            NodeKind::Table => "table",
        }
    }

    /// Parses [`NodeKind::name`].
    pub fn parse(s: &str) -> Option<NodeKind> {
        NodeKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Everything a node's key is computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyInput {
    /// Node kind.
    pub kind: NodeKind,
    /// Version string of the code that computes the node.
    pub version: String,
    /// The layout version of the row the node stores ([`super::rows`]). Version 1 is
    /// left out of the canonical JSON, so the keys of nodes written before rows were
    /// versioned are what they were; it precedes `inputs`, which must stay last
    /// ([`KeyTemplate`]).
    #[serde(default = "first_row", skip_serializing_if = "is_first_row")]
    pub row: u32,
    /// The node's own parameters, by name (scalars).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
    /// Content hashes of data it reads, by a readable name (`prompt prompts/base.txt`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Content hashes of objects kept in the cache, by name (`configuration sim-x`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub objects: BTreeMap<String, String>,
    /// Keys of the nodes it reads, by role.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
}

impl KeyInput {
    /// A key input with nothing but its kind, its version and the layout version of
    /// the row its kind stores.
    pub fn new(kind: NodeKind, version: &str) -> KeyInput {
        KeyInput {
            kind,
            version: version.to_string(),
            row: super::rows::row_version(kind),
            params: BTreeMap::new(),
            files: BTreeMap::new(),
            objects: BTreeMap::new(),
            inputs: BTreeMap::new(),
        }
    }

    /// Adds a parameter.
    pub fn param(mut self, name: &str, value: impl Into<Value>) -> KeyInput {
        self.params.insert(name.to_string(), value.into());
        self
    }

    /// Adds a file (or data) content hash.
    pub fn file(mut self, name: impl Into<String>, hash: impl Into<String>) -> KeyInput {
        self.files.insert(name.into(), hash.into());
        self
    }

    /// Adds an object reference.
    pub fn object(mut self, name: impl Into<String>, hash: impl Into<String>) -> KeyInput {
        self.objects.insert(name.into(), hash.into());
        self
    }

    /// Adds an upstream key.
    pub fn input(mut self, role: &str, key: impl Into<String>) -> KeyInput {
        self.inputs.insert(role.to_string(), key.into());
        self
    }

    /// The canonical JSON the key is taken over.
    pub fn canonical(&self) -> String {
        // Strings, sorted maps and JSON values: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The key: blake3 (hex) of [`KeyInput::canonical`].
    pub fn key(&self) -> String {
        hash_hex(self.canonical().as_bytes())
    }
}

fn first_row() -> u32 {
    1
}

fn is_first_row(row: &u32) -> bool {
    *row == 1
}

/// A key input shared by the nodes of one condition: everything but the keys of the
/// nodes each one reads. Its canonical JSON up to `inputs` is serialised and hashed
/// once; a node's key then hashes only its own upstream keys on top ([`NodeInput`]).
#[derive(Debug, Clone)]
pub struct KeyTemplate {
    input: KeyInput,
    /// blake3 fed with the canonical JSON of `input` without its `inputs` and without
    /// the closing brace.
    prefix: blake3::Hasher,
}

impl KeyTemplate {
    /// A template of `input` (which may already name some upstream keys).
    pub fn new(input: KeyInput) -> KeyTemplate {
        let bare = KeyInput {
            inputs: BTreeMap::new(),
            ..input.clone()
        };
        let json = bare.canonical();
        let mut prefix = blake3::Hasher::new();
        // `inputs` is the last field: the canonical JSON with inputs is this text
        // without its closing brace, then `,"inputs":{...}}`.
        prefix.update(json.strip_suffix('}').unwrap_or(&json).as_bytes());
        KeyTemplate { input, prefix }
    }
}

/// A node's key input as the DAG holds it: a shared [`KeyTemplate`] and the keys of
/// the nodes it reads. [`NodeInput::key`] equals [`KeyInput::key`] of
/// [`NodeInput::full`] byte for byte; only the serialisation is shared.
#[derive(Debug, Clone)]
pub struct NodeInput {
    template: std::sync::Arc<KeyTemplate>,
    /// `(role, key)` on top of the template's inputs (the upstream nodes' own keys,
    /// shared rather than copied into each node that reads them).
    inputs: Vec<(&'static str, std::sync::Arc<str>)>,
}

impl NodeInput {
    /// A node of `template` reading `inputs` (`(role, key)`).
    pub fn of(
        template: &std::sync::Arc<KeyTemplate>,
        inputs: Vec<(&'static str, std::sync::Arc<str>)>,
    ) -> NodeInput {
        NodeInput {
            template: template.clone(),
            inputs,
        }
    }

    /// The upstream keys by role: the template's, then the node's own.
    fn merged_inputs(&self) -> BTreeMap<String, String> {
        let mut all = self.template.input.inputs.clone();
        for (role, key) in &self.inputs {
            all.insert((*role).to_string(), key.to_string());
        }
        all
    }

    /// The key input in full.
    pub fn full(&self) -> KeyInput {
        KeyInput {
            inputs: self.merged_inputs(),
            ..self.template.input.clone()
        }
    }

    /// The key: blake3 (hex) of the canonical JSON of [`NodeInput::full`].
    pub fn key(&self) -> String {
        let mut h = self.template.prefix.clone();
        if self.template.input.inputs.is_empty() {
            // The common case (every execute and grade node): the node's own inputs,
            // sorted by role as the map would be, written out by hand and hashed in
            // one update.
            let mut inputs: Vec<&(&'static str, std::sync::Arc<str>)> =
                self.inputs.iter().collect();
            inputs.sort_unstable_by_key(|(role, _)| *role);
            let mut text: Vec<u8> = Vec::with_capacity(16 + 80 * inputs.len());
            for (i, (role, key)) in inputs.into_iter().enumerate() {
                text.extend_from_slice(if i == 0 { br#","inputs":{"# } else { b"," });
                json_string(&mut text, role);
                text.push(b':');
                json_string(&mut text, key);
            }
            if !self.inputs.is_empty() {
                text.push(b'}');
            }
            text.push(b'}');
            h.update(&text);
        } else {
            h.update(br#","inputs":"#);
            // A map of strings: serialising cannot fail.
            let inputs = serde_json::to_string(&self.merged_inputs()).unwrap_or_default();
            h.update(inputs.as_bytes());
            h.update(b"}");
        }
        h.finalize().to_hex().to_string()
    }
}

/// Appends `s` as a JSON string, escaped exactly as `serde_json` escapes it.
fn json_string(out: &mut Vec<u8>, s: &str) {
    // serde_json escapes only quotes, backslashes and control characters; keys and
    // roles have none, so they are copied as they are.
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing into a vector cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

impl From<KeyInput> for NodeInput {
    fn from(input: KeyInput) -> NodeInput {
        NodeInput {
            template: std::sync::Arc::new(KeyTemplate::new(input)),
            inputs: Vec::new(),
        }
    }
}

/// blake3 of bytes, as lower-case hex.
pub fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Why a node runs (or why it is listed). Rendered in one place: [`fmt::Display`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// Never run; `what` says what is new (`configuration sim-x`), if known.
    New {
        /// What is new.
        what: Option<String>,
    },
    /// A parameter changed.
    ParamChanged {
        /// Its name or path.
        path: String,
        /// Old value.
        old: String,
        /// New value.
        new: String,
    },
    /// A file (or family) the node reads changed.
    FileChanged {
        /// Its readable name.
        name: String,
    },
    /// An object the node reads changed in these fields.
    ObjectChanged {
        /// Its name.
        name: String,
        /// `(path, old, new)` of each changed field.
        fields: Vec<(String, String, String)>,
    },
    /// A node it reads changed.
    UpstreamChanged,
    /// The code that computes it changed.
    CodeVersionBumped {
        /// Old version.
        old: String,
        /// New version.
        new: String,
    },
    /// The layout of the row it stores changed ([`super::rows`]).
    RowLayoutChanged {
        /// Old version.
        old: u32,
        /// New version.
        new: u32,
    },
    /// Its result was recorded but is not all there.
    Incomplete {
        /// What is missing.
        detail: String,
    },
    /// Its stored row does not deserialise as its kind's row type.
    RowUnreadable {
        /// serde's error.
        detail: String,
    },
    /// In the cache but no longer in the manifest (kept).
    Orphaned,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::New { what: Some(what) } => write!(f, "new {what}"),
            Reason::New { what: None } => write!(f, "new"),
            Reason::ParamChanged { path, old, new } => write!(f, "{path} {old} -> {new}"),
            Reason::FileChanged { name } => write!(f, "{name} changed"),
            Reason::ObjectChanged { name, fields } => {
                write!(f, "{name} changed")?;
                const SHOWN: usize = 3;
                let shown: Vec<String> = fields
                    .iter()
                    .take(SHOWN)
                    .map(|(p, o, n)| format!("{p} {o} -> {n}"))
                    .collect();
                if !shown.is_empty() {
                    write!(f, ": {}", shown.join(", "))?;
                }
                if fields.len() > SHOWN {
                    write!(f, " and {} more", fields.len() - SHOWN)?;
                }
                Ok(())
            }
            Reason::UpstreamChanged => write!(f, "upstream changed"),
            Reason::CodeVersionBumped { old, new } => write!(f, "code version {old} -> {new}"),
            Reason::RowLayoutChanged { old, new } => {
                write!(f, "stored row layout {old} -> {new}")
            }
            Reason::Incomplete { detail } => write!(f, "incomplete: {detail}"),
            Reason::RowUnreadable { detail } => write!(f, "stored row unreadable: {detail}"),
            Reason::Orphaned => write!(f, "no longer in the manifest (kept in the cache)"),
        }
    }
}

/// Renders a parameter value for a reason line: strings bare, the rest as JSON.
pub fn show(value: Option<&Value>) -> String {
    match value {
        None => "(none)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// Why `new` differs from `old`, most specific first; `objects` fetches a cached
/// object's JSON by hash (for field-by-field diffs). Empty when they are equal.
pub fn diff(
    old: &KeyInput,
    new: &KeyInput,
    objects: &dyn Fn(&str) -> Option<Value>,
) -> Vec<Reason> {
    let mut reasons = Vec::new();
    if old.version != new.version {
        reasons.push(Reason::CodeVersionBumped {
            old: old.version.clone(),
            new: new.version.clone(),
        });
    }
    if old.row != new.row {
        reasons.push(Reason::RowLayoutChanged {
            old: old.row,
            new: new.row,
        });
    }
    for path in union(&old.params, &new.params) {
        let (o, n) = (old.params.get(path), new.params.get(path));
        if o != n {
            reasons.push(Reason::ParamChanged {
                path: path.clone(),
                old: show(o),
                new: show(n),
            });
        }
    }
    for name in union(&old.files, &new.files) {
        if old.files.get(name) != new.files.get(name) {
            reasons.push(Reason::FileChanged { name: name.clone() });
        }
    }
    for name in union(&old.objects, &new.objects) {
        let (o, n) = (old.objects.get(name), new.objects.get(name));
        if o != n {
            let value = |h: Option<&String>| h.and_then(|h| objects(h)).unwrap_or(Value::Null);
            reasons.push(Reason::ObjectChanged {
                name: name.clone(),
                fields: field_changes(&value(o), &value(n)),
            });
        }
    }
    if old.inputs != new.inputs {
        reasons.push(Reason::UpstreamChanged);
    }
    reasons
}

fn union<'a, V>(a: &'a BTreeMap<String, V>, b: &'a BTreeMap<String, V>) -> Vec<&'a String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// `(path, old, new)` of every leaf that differs between two JSON values, paths dotted.
pub fn field_changes(old: &Value, new: &Value) -> Vec<(String, String, String)> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    flatten("", old, &mut a);
    flatten("", new, &mut b);
    union(&a, &b)
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| (p.clone(), show(a.get(p)), show(b.get(p))))
        .collect()
}

fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, Value>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&join(k), v, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn execute(cap: u32, prompt: &str) -> KeyInput {
        KeyInput::new(NodeKind::Execute, "execute/1")
            .param("completion_cap", cap)
            .file("prompt prompts/base.txt", prompt)
            .input("compile", "k1")
    }

    #[test]
    fn keys_are_stable_and_change_with_any_input() {
        let a = execute(1024, "p");
        assert_eq!(a.key(), execute(1024, "p").key());
        assert_ne!(a.key(), execute(4096, "p").key());
        assert_ne!(a.key(), execute(1024, "q").key());
        assert_ne!(a.key(), a.clone().input("compile", "k2").key());
    }

    #[test]
    fn a_changed_cap_and_prompt_are_named_in_the_reasons() {
        let reasons = diff(&execute(1024, "p"), &execute(4096, "q"), &|_| None);
        let text: Vec<String> = reasons.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "completion_cap 1024 -> 4096",
                "prompt prompts/base.txt changed"
            ]
        );
        assert!(diff(&execute(1, "p"), &execute(1, "p"), &|_| None).is_empty());
    }

    #[test]
    fn objects_are_diffed_field_by_field() {
        let old = execute(1, "p").object("configuration sim-x", "h1");
        let new = execute(1, "p").object("configuration sim-x", "h2");
        let objects = |h: &str| {
            Some(match h {
                "h1" => json!({"prices": {"input_per_mtok": 0.1}, "model": "m"}),
                _ => json!({"prices": {"input_per_mtok": 0.2}, "model": "m"}),
            })
        };
        let text: Vec<String> = diff(&old, &new, &objects)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            text,
            ["configuration sim-x changed: prices.input_per_mtok 0.1 -> 0.2"]
        );
    }

    /// The shared-prefix key is the key of the full input, whatever the template
    /// holds, whichever inputs the node adds, and however the names must be escaped.
    #[test]
    fn a_node_key_equals_the_key_of_its_full_input() {
        let templates = [
            KeyInput::new(NodeKind::Grade, "grade/1"),
            KeyInput::new(NodeKind::Grade, "grade/1").param("episode_budget", 128_000),
            execute(1024, "p").object("configuration \"q\"\n", "h"),
            execute(1024, "p").input("variants", "kv"),
            KeyInput::new(NodeKind::Table, "t/1").file("manifest m", "h"),
        ];
        let node_inputs: [Vec<(&'static str, std::sync::Arc<str>)>; 4] = [
            vec![],
            vec![("compile", "k1".into())],
            vec![("execute", "k2".into()), ("compile", "k1".into())],
            vec![
                ("compile", "k\"3".into()),
                ("zeta", "k4\u{1}\u{7f}é\\".into()),
            ],
        ];
        for template in templates {
            let shared = std::sync::Arc::new(KeyTemplate::new(template.clone()));
            for inputs in &node_inputs {
                let node = NodeInput::of(&shared, inputs.clone());
                let mut full = template.clone();
                for (role, key) in inputs {
                    full = full.input(role, key.to_string());
                }
                assert_eq!(node.full(), full);
                assert_eq!(node.key(), full.key(), "{}", full.canonical());
            }
            assert_eq!(NodeInput::from(template.clone()).key(), template.key());
        }
    }

    /// Version 1 of a row layout hashes as keys did before rows were versioned (the
    /// keys in today's caches, tables and lockfiles stay valid); any other version
    /// changes the key and says so.
    #[test]
    fn the_first_row_version_keeps_the_key_and_a_bump_reruns_with_its_reason() {
        let a = execute(1024, "p");
        assert_eq!(a.row, 1);
        assert!(!a.canonical().contains("\"row\""), "{}", a.canonical());
        // A key input as stored before rows were versioned reads back as version 1.
        let stored: KeyInput = serde_json::from_str(r#"{"kind":"grade","version":"grade/1"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored.row, 1);
        assert_eq!(
            KeyInput::new(NodeKind::Grade, "grade/1").key(),
            hash_hex(br#"{"kind":"grade","version":"grade/1"}"#)
        );
        let bumped = KeyInput {
            row: 2,
            ..a.clone()
        };
        assert_ne!(bumped.key(), a.key());
        let text: Vec<String> = diff(&a, &bumped, &|_| None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(text, ["stored row layout 1 -> 2"]);
        // The shared-prefix key agrees with the full key at any row version.
        let template = std::sync::Arc::new(KeyTemplate::new(bumped.clone()));
        let node = NodeInput::of(&template, vec![("execute", "k".into())]);
        assert_eq!(node.key(), node.full().key());
    }

    #[test]
    fn only_an_upstream_change_says_so() {
        let a = execute(1, "p");
        let b = a.clone().input("compile", "other");
        assert_eq!(diff(&a, &b, &|_| None), vec![Reason::UpstreamChanged]);
    }
}
