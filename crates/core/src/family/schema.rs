//! The on-disk schema of `families/`: what a family file may say, exactly as serde reads it.
//!
//! These are the *raw* types (stage one of parsing). They carry spans where a later
//! semantic check may need to point back into the file, and they reject unknown keys
//! so a misspelled key is an error at its span rather than a silently ignored field.
//! Resolution and validation happen in [`super::load`]; nothing here interprets values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use toml::Spanned;

/// `families/catalogue.toml`: the coordinates connectors are built from, plus
/// collections that only ever appear as distractors.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogueFile {
    /// Workspaces (first connector coordinate).
    pub workspaces: Vec<CoordinateDef>,
    /// Regions (second connector coordinate).
    pub regions: Vec<CoordinateDef>,
    /// Collections that belong to no intent; used only to build distractor connectors.
    #[serde(default)]
    pub collections: Vec<CollectionDef>,
}

/// A named coordinate with a short code used to build tool names.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CoordinateDef {
    /// Human name, as written in descriptions and requests (`northwind-finance`).
    pub name: String,
    /// Short lowercase code used inside tool names (`nwf`).
    pub code: String,
}

/// One file under `families/{core,holdout,frontier}/`: an intent, its collection and its
/// families.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IntentFile {
    /// What is shared by every family of the intent.
    pub intent: IntentDef,
    /// The record collection the intent's route points at, with its tools.
    pub collection: CollectionDef,
    /// The families of this intent.
    pub family: Vec<FamilyDef>,
}

/// Which study a family belongs to.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// The 36 core families (capacity, discovery, repairs).
    Core,
    /// Held-out intents for the structural holdout.
    Holdout,
    /// Deep handoff chains (2, 6, 14, 30 calls).
    Frontier,
}

/// The record domain of an intent.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Invoices, payments, ledgers.
    Accounting,
    /// Mailboxes, threads, messages.
    Email,
    /// Documents, folders, retention.
    File,
    /// Events, rooms, attendees.
    Calendar,
}

crate::level_names!(Split { Core => "core", Holdout => "holdout", Frontier => "frontier" });
crate::level_names!(Domain {
    Accounting => "accounting",
    Email => "email",
    File => "file",
    Calendar => "calendar",
});

/// The shared definition of an intent.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IntentDef {
    /// Unique intent name (`overdue_escalation`).
    pub name: Spanned<String>,
    /// Record domain.
    pub domain: Domain,
    /// Core, holdout or frontier.
    pub split: Split,
    /// The noun that names the case in the request (`invoice`).
    pub subject: String,
    /// The request template. Must contain each placeholder of
    /// [`crate::family::PLACEHOLDERS`] exactly once; everything else is the intent's prose.
    pub template: Spanned<String>,
    /// Record kinds of the handoff chain at full workflow depth, one per stage (1 to 3).
    pub chain: Vec<String>,
    /// Kind of the pure hand-off records inserted between stages at frontier depths.
    #[serde(default)]
    pub hop_kind: Option<String>,
    /// Tool suffixes (of the route's collection) that do the work of this intent.
    pub operational_tools: Vec<String>,
    /// The requested facts, in the order the answer schema lists them.
    pub facts: Vec<FactDef>,
    /// How the facts decide the label.
    pub policy: PolicyDef,
    /// The one state change the request may ask for, and when.
    #[serde(default)]
    pub state_change: Option<StateChangeRule>,
}

/// The JSON type of a fact value.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FactType {
    /// Any string.
    String,
    /// A JSON integer.
    Integer,
    /// A string `YYYY-MM-DD`; compares chronologically.
    Date,
    /// `true` or `false`.
    Boolean,
}

/// A requested fact of an intent.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FactDef {
    /// Field name in records and in the answer.
    pub name: String,
    /// JSON type.
    #[serde(rename = "type")]
    pub fact_type: FactType,
    /// The chain stage (1-based) whose record holds this fact at full workflow depth.
    pub stage: u8,
    /// Plausible other values, used for superseded versions and for records of other
    /// routes. At least two, none equal to a family's current value is required only
    /// for the superseded version (the compiler picks one that differs).
    pub alternatives: Vec<Json>,
}

/// A decision policy: the first rule whose conditions all hold gives the label.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyDef {
    /// Rules in order.
    pub rules: Vec<RuleDef>,
    /// The label when no rule holds.
    pub otherwise: String,
}

/// One rule of a policy.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// The label this rule gives.
    pub label: String,
    /// Conditions, all of which must hold.
    pub when: Vec<ConditionDef>,
}

/// A comparison of one fact with a constant.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConditionDef {
    /// The fact compared.
    pub fact: String,
    /// The comparison.
    pub op: Op,
    /// The constant (a list for `one_of`).
    pub value: Json,
}

/// Comparison operators of the policy language.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Equal (any type).
    Equals,
    /// Not equal (any type).
    NotEquals,
    /// Integer strictly greater.
    GreaterThan,
    /// Integer strictly less.
    LessThan,
    /// Integer greater or equal.
    AtLeast,
    /// Integer less or equal.
    AtMost,
    /// Date strictly earlier.
    Before,
    /// Date strictly later.
    After,
    /// Member of a list of constants.
    OneOf,
}

/// The state change an intent's request describes: when the decision is `when`, call
/// the route's `tool` with these arguments; otherwise change nothing.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StateChangeRule {
    /// The decision label that calls for the change.
    pub when: String,
    /// Tool suffix (a write tool of the route's collection).
    pub tool: String,
    /// The chain stage whose record id goes into the tool's `id` argument, if it has one.
    #[serde(default)]
    pub target_stage: Option<u8>,
    /// Further required arguments. A value `{fact:NAME}` stands for the fact's value and
    /// `{case_ref}` for the case reference; anything else is a literal string.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}

/// A record collection: its kinds and its tools. A connector is a collection placed at a
/// workspace and a region.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionDef {
    /// Collection name (third connector coordinate).
    pub name: String,
    /// Short code used in tool names.
    pub code: String,
    /// Record domain.
    pub domain: Domain,
    /// What the collection holds, for tool descriptions.
    pub description: String,
    /// Record kinds.
    pub kinds: Vec<KindDef>,
    /// Tool shapes, instantiated once per connector.
    pub tools: Vec<ToolDef>,
}

/// A record kind with the non-requested fields its records always carry.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KindDef {
    /// Kind name (`invoice`).
    pub name: String,
    /// Filler fields and their values.
    #[serde(default)]
    pub filler: BTreeMap<String, Json>,
}

/// What a tool does.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// `{query}` -> summaries of records whose reference equals the query.
    Search,
    /// `{id}` -> the full record of the tool's kind.
    Read,
    /// `{id, field, value}` -> sets a field.
    Update,
    /// `{id}` -> deletes a record.
    Delete,
    /// `{id, amount}` -> issues a payment against a record.
    Pay,
    /// `{to, subject, body}` -> sends a message.
    Send,
}

impl Operation {
    /// Whether the operation changes state.
    pub fn is_write(self) -> bool {
        !matches!(self, Operation::Search | Operation::Read)
    }
}

/// A tool shape of a collection.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// Suffix after the connector prefix (`read_invoice`).
    pub suffix: String,
    /// What it does.
    pub op: Operation,
    /// The record kind it reads or writes (required for read/update/delete/pay).
    #[serde(default)]
    pub kind: Option<String>,
    /// Public description; the compiler appends the connector coordinates.
    pub description: String,
    /// JSON Schema of the arguments (shared by every compiled tool made from it).
    pub parameters: std::sync::Arc<Json>,
}

/// One family of an intent.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyDef {
    /// Unique family name.
    pub name: Spanned<String>,
    /// The case reference: the first search query and the case's name in the request.
    pub case_ref: String,
    /// Route workspace (a catalogue workspace name).
    pub workspace: Spanned<String>,
    /// Route region (a catalogue region name).
    pub region: Spanned<String>,
    /// Current fact values.
    pub facts: Spanned<BTreeMap<String, Json>>,
    /// The decision label the policy gives on these facts.
    pub decision: Spanned<String>,
    /// `none`, or the tool suffix of the permitted state change.
    pub state_change: Spanned<String>,
    /// Where distractor connectors come from.
    pub distractors: DistractorPools,
}

/// Coordinates distractor connectors are combined from (with the route's own).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DistractorPools {
    /// Other workspaces.
    pub workspaces: Vec<String>,
    /// Other regions.
    pub regions: Vec<String>,
    /// Other collections.
    pub collections: Vec<String>,
}
