//! Layering with figment: the manifest file, then `TBB_*` environment variables, then
//! `--set key=value` pairs, later layers winning key by key.
//!
//! Each environment variable and each `--set` pair is its own figment provider, named
//! after itself, so that [`Layers::origin`] can say where any value came from: the file
//! (then with the value's byte span, from [`SpanIndex`]), or a named override.
//! figment does not carry byte spans, which is why the file is also indexed with `toml`.
//!
//! Environment variables are read only for the manifest's own keys, and tables only
//! key by key (`TBB_REPEATS`, `TBB_BUDGETS__EPISODE_BUDGET`, `TBB_STUDY__NAME`): other
//! `TBB_*` variables belong to the command line (`TBB_FAMILIES`, `TBB_CONFIGS`).

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
        Ok(Layers { figment, spans })
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
            if let Some(meta) = self.figment.find_metadata(p) {
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
