//! Layering with figment: the manifest file, then `TBB_*` environment variables, then
//! `--set key=value` pairs, later layers winning key by key.
//!
//! Each environment variable and each `--set` pair is its own figment provider, named
//! after itself, so that [`Layers::origin`] can say where any value came from: the file
//! (then with the value's byte span, from [`SpanIndex`]), or a named override.
//! figment does not carry byte spans, which is why the file is also indexed with `toml`.
//!
//! Environment variables are read only for the manifest's own keys, and tables only
//! key by key (`TBB_REPEATS`, `TBB_BUDGETS__EPISODE_BUDGET`, `TBB_STUDY__NAME`); the
//! command line reads its own ([`COMMAND_LINE_VARIABLES`]), the catalogue names its key
//! variables, and the repository's scripts and benches keep theirs
//! ([`SCRIPT_VARIABLES`]). Any other `TBB_*` variable is a mistake that would
//! otherwise be ignored in silence, so [`unread_variables`] names it as a problem.

use std::ops::Range;

use figment::providers::Serialized;
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};

use super::raw::SpanIndex;

/// The name of the file's layer.
const FILE_LAYER: &str = "manifest file";

/// The manifest's top-level keys, the only ones `TBB_*` variables may set.
pub const TOP_LEVEL_KEYS: [&str; 12] = [
    "study",
    "families",
    "cells",
    "configurations",
    "budgets",
    "repeats",
    "schedule",
    "arms",
    "blocks",
    "analyses",
    // Replaced by `[[arms]]`; read so that an override of them gets the same advice.
    "lanes",
    "repairs",
];

/// The `TBB_*` variables the command line's global options read.
pub const COMMAND_LINE_VARIABLES: [&str; 7] = [
    "TBB_FAMILIES",
    "TBB_CONFIGS",
    "TBB_PROMPTS",
    "TBB_OUTPUTS",
    "TBB_LOCKFILES",
    "TBB_CACHE",
    "TBB_CLAIM_TTL",
];

/// The variables of the repository's own scripts and benches (`scripts/`, `benches/`,
/// the notebook), which run tbb with them still set: tbb reads none of them. A name
/// ending in `_` is a prefix.
pub const SCRIPT_VARIABLES: [&str; 8] = [
    "TBB_LOCAL_",
    "TBB_LIVE_",
    "TBB_BIN",
    "TBB_COMMON",
    "TBB_TIMEOUT",
    "TBB_STUDY_DIR",
    "TBB_NOTEBOOK_VENV",
    "TBB_REPORT_DIR",
];

/// A `TBB_*` variable of `env` that nothing reads: what is wrong, and how to fix it.
pub struct UnreadVariable {
    /// What is wrong, naming the variable.
    pub message: String,
    /// The nearest variable tbb reads, and the list.
    pub help: String,
}

/// The `TBB_*` variables of `env` that neither the manifest, the command line, the
/// catalogue's key variables (`key_variables`) nor the repository's scripts read.
pub fn unread_variables(env: &[(String, String)], key_variables: &[&str]) -> Vec<UnreadVariable> {
    let manifest_keys: Vec<String> = TOP_LEVEL_KEYS
        .iter()
        .filter(|k| !matches!(**k, "lanes" | "repairs"))
        .map(|k| format!("TBB_{}", k.to_ascii_uppercase()))
        .collect();
    let mut out = Vec::new();
    for (var, _) in env {
        let Some(rest) = var.strip_prefix("TBB_") else {
            continue;
        };
        let key = rest.to_ascii_lowercase().replace("__", ".");
        let top = key.split('.').next().unwrap_or_default();
        let whole_table = !key.contains('.') && !TOP_LEVEL_VALUES.contains(&top);
        let read = (TOP_LEVEL_KEYS.contains(&top) && !whole_table)
            || COMMAND_LINE_VARIABLES.contains(&var.as_str())
            || key_variables.contains(&var.as_str())
            || SCRIPT_VARIABLES
                .iter()
                .any(|s| var == s || (s.ends_with('_') && var.starts_with(s)));
        if read {
            continue;
        }
        // Compared without the shared `TBB_`, which would make any two names look
        // alike.
        let known = COMMAND_LINE_VARIABLES
            .iter()
            .copied()
            .chain(manifest_keys.iter().map(String::as_str))
            .filter_map(|k| k.strip_prefix("TBB_"));
        let reads = format!(
            "tbb reads {}, and TBB_<KEY> for a manifest key (`TBB_REPEATS`, `TBB_BUDGETS__EPISODE_BUDGET`)",
            COMMAND_LINE_VARIABLES.join(", ")
        );
        let nearest = tbb_core::family::closest(rest, known);
        let help = match (nearest, whole_table && TOP_LEVEL_KEYS.contains(&top)) {
            (_, true) => format!(
                "a `TBB_*` variable sets one key of a table, e.g. `{var}__<KEY>` (`TBB_BUDGETS__EPISODE_BUDGET`); unset {var}"
            ),
            (Some(n), _) => format!("did you mean TBB_{n}? {reads}; unset {var}"),
            (None, _) => format!("{reads}; unset {var}"),
        };
        out.push(UnreadVariable {
            message: format!("environment variable {var} is not one tbb reads"),
            help,
        });
    }
    out
}

/// The top-level keys that are values, not tables.
const TOP_LEVEL_VALUES: [&str; 4] = ["repeats", "schedule", "lanes", "repairs"];

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The manifest file, at this byte span.
    File(Range<usize>),
    /// An override, by name (`--set repeats`, `environment variable TBB_REPEATS`).
    Override(String),
    /// Not given anywhere: a default.
    Default,
}

/// One named layer.
struct Layer {
    name: String,
    dict: Dict,
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name.clone())
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.dict.clone()))
    }
}

/// The layered settings and the file's spans.
pub struct Layers {
    figment: Figment,
    /// The merged value with its tags, merged once: figment's own `find_metadata`
    /// re-merges every layer on each call, which made locating 5,000 problems take
    /// seconds per thousand.
    merged: Option<Value>,
    spans: SpanIndex,
}

impl Layers {
    /// Layers the file's table, then the environment's `TBB_*` variables (given, so
    /// callers choose the environment), then the `--set` pairs.
    pub fn new(
        file: &toml::Table,
        spans: SpanIndex,
        env: &[(String, String)],
        sets: &[(String, String)],
    ) -> Result<Layers, Box<figment::Error>> {
        let file_dict = Serialized::defaults(file)
            .data()?
            .remove(&Profile::Default)
            .unwrap_or_default();
        let mut figment = Figment::new().merge(Layer {
            name: FILE_LAYER.into(),
            dict: file_dict,
        });
        let mut env: Vec<&(String, String)> = env.iter().collect();
        env.sort();
        for (var, value) in env {
            let Some(rest) = var.strip_prefix("TBB_") else {
                continue;
            };
            let key = rest.to_ascii_lowercase().replace("__", ".");
            let top = key.split('.').next().unwrap_or_default();
            // A table is only set key by key (`TBB_FAMILIES` is the command line's
            // families directory, not the `[families]` table).
            let whole_table = !key.contains('.') && !TOP_LEVEL_VALUES.contains(&top);
            if !TOP_LEVEL_KEYS.contains(&top) || whole_table {
                continue;
            }
            figment = figment.merge(layer(format!("environment variable {var}"), &key, value)?);
        }
        for (key, value) in sets {
            let key = key.trim();
            figment = figment.merge(layer(format!("--set {key}"), key, value)?);
        }
        let merged = figment.find_value("").ok();
        Ok(Layers {
            figment,
            merged,
            spans,
        })
    }

    /// The merged settings as JSON.
    pub fn merged(&self) -> Result<serde_json::Value, Box<figment::Error>> {
        self.figment.extract().map_err(Box::new)
    }

    /// Every number that is NaN or infinite, by dotted path, with its value. TOML allows
    /// `nan` and `inf`, but no manifest value may be either, and they must be caught
    /// here: the merged JSON has no such numbers and would turn them into nulls, that is
    /// into silent defaults.
    pub fn non_finite(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut data) = self.figment.data() {
            if let Some(dict) = data.remove(&Profile::Default) {
                for (key, value) in &dict {
                    non_finite_in(key.clone(), value, &mut out);
                }
            }
        }
        out
    }

    /// The names of the overrides that set anything, in precedence order.
    pub fn overrides(&self) -> Vec<String> {
        self.figment
            .metadata()
            .map(|m| m.name.to_string())
            .filter(|n| n != FILE_LAYER)
            .collect()
    }

    /// Where the value at a dotted path (`cells.list.0.v`) came from: the layer that
    /// set the deepest key of the path that any layer set.
    pub fn origin(&self, path: &str) -> Origin {
        let mut p = path;
        loop {
            let tag = self
                .merged
                .as_ref()
                .and_then(|v| v.find_ref(p))
                .map(Value::tag);
            if let Some(meta) = tag.and_then(|t| self.figment.get_metadata(t)) {
                if meta.name == FILE_LAYER {
                    return self.spans.find(path).map_or(Origin::Default, Origin::File);
                }
                return Origin::Override(meta.name.to_string());
            }
            match p.rfind('.') {
                Some(i) => p = &p[..i],
                None => return Origin::Default,
            }
        }
    }
}

fn non_finite_in(path: String, value: &Value, out: &mut Vec<(String, f64)>) {
    match value {
        Value::Num(_, n) => {
            if let Some(x) = n.to_f64().filter(|x| !x.is_finite()) {
                out.push((path, x));
            }
        }
        Value::Dict(_, dict) => {
            for (key, v) in dict {
                non_finite_in(format!("{path}.{key}"), v, out);
            }
        }
        Value::Array(_, items) => {
            for (i, v) in items.iter().enumerate() {
                non_finite_in(format!("{path}.{i}"), v, out);
            }
        }
        _ => {}
    }
}

/// A layer setting one dotted key. The value is read as figment reads environment
/// variables: TOML-like literals (`2`, `[4096]`, `true`), anything else a string.
fn layer(name: String, key: &str, value: &str) -> Result<Layer, Box<figment::Error>> {
    let value: Value = value.trim().parse().unwrap_or_else(|e| match e {});
    let dict = Serialized::default(key, value)
        .data()?
        .remove(&Profile::Default)
        .unwrap_or_default();
    Ok(Layer { name, dict })
}
