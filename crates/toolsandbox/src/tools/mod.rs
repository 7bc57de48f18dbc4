//! ToolSandbox's tools: the 29 that run offline, over the world, and the registry of all
//! 34 with their agent-facing schemas.
//!
//! One file per upstream module (`contact`, `messaging`, `reminder`, `setting`,
//! `utilities`, `user_tools`). Each tool checks its arguments as upstream's does
//! ([`args`]), refuses when the world is not in the state it needs (cellular service
//! for messages, location service for the current location, wifi for holidays), reads
//! and changes the [`Context`] as upstream's does, and answers the value upstream's
//! returns. A refusal is a [`ToolError`] whose text is the last line of the traceback
//! upstream's execution environment shows the agent (`ExceptionType: message`).
//!
//! The five RapidAPI tools need the internet; [`execute`] refuses them with
//! [`ToolError::NeedsInternet`].
//!
//! Never: reads the wall clock (the [`Clock`] is passed in), draws random numbers (new
//! ids are derived from content with blake3), or touches the network or file system.

mod args;
pub mod contact;
pub mod messaging;
pub mod reminder;
mod search;
pub mod setting;
pub mod user_tools;
pub mod utilities;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::clock::Clock;
use crate::context::{Context, ContextError, Namespace};
use crate::data::{self, DataError, VendoredFile};
use crate::phone::PhoneError;
pub(crate) use args::Args;
use args::Param;

/// The tools that call RapidAPI (upstream's `rapid_api_search_tools.py`).
pub const RAPID_API_TOOLS: [&str; 5] = [
    "convert_currency",
    "search_lat_lon",
    "search_location_around_lat_lon",
    "search_stock",
    "search_weather_around_lat_lon",
];

/// A tool's refusal. The text is what upstream's agent reads: the exception's
/// qualified type and its message, as the last line of a Python traceback.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// Python's `TypeError` (a call or annotation mismatch).
    #[error("TypeError: {0}")]
    Type(String),
    /// Python's `ValueError`.
    #[error("ValueError: {0}")]
    Value(String),
    /// Python's `PermissionError` (a service is off, or low battery mode forbids it).
    #[error("PermissionError: {0}")]
    Permission(String),
    /// Python's `ConnectionError` (cellular service or wifi is off).
    #[error("ConnectionError: {0}")]
    Connection(String),
    /// polars' `NoDataError`: no row has the id.
    #[error("polars.exceptions.NoDataError: {0}")]
    NoData(String),
    /// polars' `DuplicateError`: an id or the self contact is not unique.
    #[error("polars.exceptions.DuplicateError: {0}")]
    Duplicate(String),
    /// phonenumbers' `NumberParseException`.
    #[error("phonenumbers.phonenumberutil.NumberParseException: {0}")]
    PhoneNumber(PhoneError),
    /// pint's `DimensionalityError`.
    #[error("pint.errors.DimensionalityError: {0}")]
    Dimensionality(String),
    /// A RapidAPI tool: it needs the internet, which this crate never reaches.
    #[error(
        "ConnectionError: {tool} needs the internet (RapidAPI), which this sandbox does not reach"
    )]
    NeedsInternet {
        /// The tool.
        tool: String,
    },
    /// No tool has this name (Python's `NameError` in the console).
    #[error("NameError: name '{0}' is not defined")]
    UnknownTool(String),
    /// An input upstream's libraries accept but this crate does not reproduce (a unit
    /// outside the table, a year outside the holiday rules, a geodesic that does not
    /// converge).
    #[error("NotImplementedError: {0}")]
    Unsupported(String),
    /// The world refused a change; a tool's own checks should make this unreachable.
    #[error("RuntimeError: {0}")]
    World(#[from] ContextError),
}

/// Which upstream module a tool belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// `tools/contact.py`.
    Contact,
    /// `tools/messaging.py`.
    Messaging,
    /// `tools/reminder.py`.
    Reminder,
    /// `tools/setting.py`.
    Setting,
    /// `tools/utilities.py`.
    Utilities,
    /// `tools/user_tools.py`.
    UserTools,
}

/// The signature and body of one offline tool.
pub(crate) struct Tool {
    pub name: &'static str,
    pub module: Module,
    pub params: &'static [Param],
    /// Decorated `@typechecked` upstream.
    pub typechecked: bool,
    /// The key order of the dicts it returns (for their Python text).
    pub result_keys: &'static [&'static str],
    pub run: fn(&mut Context, Clock, &Args) -> Result<Value, ToolError>,
}

fn all_tools() -> impl Iterator<Item = &'static Tool> {
    contact::TOOLS
        .iter()
        .chain(messaging::TOOLS)
        .chain(reminder::TOOLS)
        .chain(setting::TOOLS)
        .chain(utilities::TOOLS)
        .chain(user_tools::TOOLS)
}

pub(crate) fn find(name: &str) -> Option<&'static Tool> {
    all_tools().find(|t| t.name == name)
}

/// The 29 offline tools' names and their modules, in upstream's module order.
pub fn offline_tools() -> Vec<(&'static str, Module)> {
    all_tools().map(|t| (t.name, t.module)).collect()
}

/// The order of a tool's parameters (for the Python text of its arguments).
pub(crate) fn param_order(tool: &str) -> Vec<&'static str> {
    find(tool).map_or_else(Vec::new, |t| t.params.iter().map(|p| p.name).collect())
}

/// The key order of a tool's result dicts.
pub(crate) fn result_order(tool: &str) -> &'static [&'static str] {
    find(tool).map_or(&[], |t| t.result_keys)
}

/// Runs the tool `name` with `arguments` (the JSON object of keyword arguments) on the
/// world, as upstream's execution environment would. On `Err` the world may hold the
/// changes made before the refusal, as upstream's does (a caller wanting all or nothing
/// runs on a clone).
pub fn execute(
    ctx: &mut Context,
    clock: Clock,
    name: &str,
    arguments: &Value,
) -> Result<Value, ToolError> {
    if RAPID_API_TOOLS.contains(&name) {
        return Err(ToolError::NeedsInternet { tool: name.into() });
    }
    let tool = find(name).ok_or_else(|| ToolError::UnknownTool(name.into()))?;
    let args = Args::parse(name, tool.params, tool.typechecked, arguments)?;
    (tool.run)(ctx, clock, &args)
}

/// A snapshot's rows without the index column, as the tools return them.
pub(crate) fn rows_value(rows: Vec<crate::context::Row>) -> Value {
    Value::Array(rows.into_iter().map(Value::Object).collect())
}

/// A new id for a row of `ns`, as deterministic as the episode: derived with blake3
/// from the row's content, the message being processed and the table's length, shaped
/// like the uuid4 upstream draws (version nibble 8, "custom"), and never one the current
/// snapshot already holds.
pub(crate) fn new_id(ctx: &Context, ns: Namespace, id_column: &str, content: &Value) -> String {
    let existing = ctx.get_database(ns, None, false).unwrap_or_default();
    let history = ctx.tables().get(&ns).map_or(0, Vec::len);
    let order = ns.columns();
    let mut attempt: u64 = 0;
    loop {
        let mut h = blake3::Hasher::new();
        h.update(b"tbb-toolsandbox new id v1\0");
        h.update(ns.name().as_bytes());
        h.update(&(ctx.max_sandbox_message_index() + 1).to_le_bytes());
        h.update(&history.to_le_bytes());
        h.update(&attempt.to_le_bytes());
        h.update(crate::py::dumps(content, order).as_bytes());
        let b = h.finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&b.as_bytes()[..16]);
        bytes[6] = (bytes[6] & 0x0f) | 0x80;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex: String = bytes.iter().map(|x| format!("{x:02x}")).collect();
        let id = format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        );
        if !existing
            .iter()
            .any(|r| r.get(id_column) == Some(&Value::from(id.as_str())))
        {
            return id;
        }
        attempt += 1;
    }
}

/// The agent-facing schemas of all 34 tools (OpenAI function format), from the pinned
/// `tools.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    schemas: BTreeMap<String, Value>,
    order: Vec<String>,
}

impl Registry {
    /// The schemas compiled into the crate.
    pub fn builtin() -> Result<Registry, DataError> {
        Registry::from_json(VendoredFile::Tools.builtin_bytes())
    }

    /// The schemas from the bytes of `tools.json`, refused unless they are the pinned
    /// file.
    pub fn from_json(bytes: &[u8]) -> Result<Registry, DataError> {
        data::verify(VendoredFile::Tools, bytes)?;
        let list: Vec<Value> = data::parse(VendoredFile::Tools, bytes)?;
        let mut schemas = BTreeMap::new();
        let mut order = Vec::new();
        for schema in list {
            let name = schema["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            order.push(name.clone());
            schemas.insert(name, schema);
        }
        Ok(Registry { schemas, order })
    }

    /// A tool's schema.
    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.schemas.get(name)
    }

    /// Every tool's name, in the file's order.
    pub fn names(&self) -> &[String] {
        &self.order
    }

    /// The schemas of the tools in `allow_list`, in its order (what the agent is shown).
    pub fn schemas_for<'a>(&'a self, allow_list: &'a [String]) -> impl Iterator<Item = &'a Value> {
        allow_list.iter().filter_map(|n| self.schemas.get(n))
    }
}

#[cfg(test)]
mod tests;
