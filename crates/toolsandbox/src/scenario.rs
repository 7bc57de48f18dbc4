//! ToolSandbox's scenarios as typed values, read from the pinned export.
//!
//! A scenario is upstream's `Scenario` after its extensions were applied: the starting
//! world (every namespace's table, the conversation's first messages included), the
//! tools the agent may call (in upstream's seeded, shuffled order), its categories, the
//! message budget, and the milestone and minefield matchers. Each of upstream's 129
//! base scenarios comes in three variants, with 0, 3 and 10 distraction tools added to
//! its allow list (the variant's name carries `_3_distraction_tools` or
//! `_10_distraction_tools`).
//!
//! This module owns the scenario's shape and the questions asked of the set as a whole
//! (which need the internet, which base each variant extends). It must never run a tool
//! or grade: the matchers stay raw JSON here, typed by the evaluator.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::context::{Context, Namespace, Row};
use crate::data::{self, DataError, VendoredFile};
use crate::tools::RAPID_API_TOOLS;

/// A scenario's category (upstream's `ScenarioCategories`, the ones the export holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Category {
    /// Completed with a single tool call.
    SingleToolCall,
    /// Needs several tool calls.
    MultipleToolCall,
    /// Needs one user turn.
    SingleUserTurn,
    /// Needs several user turns.
    MultipleUserTurn,
    /// A tool refuses until the world is in the state it needs.
    StateDependency,
    /// Surface text must be turned into a canonical form (a date, a unit).
    Canonicalization,
    /// Needs co-reference resolution.
    Coreference,
    /// Needs disambiguation between entities or tools.
    Disambiguation,
    /// Cannot be completed with the tools and information given.
    InsufficientInformation,
    /// Only the tools needed.
    NoDistractionTools,
    /// Three distraction tools added.
    ThreeDistractionTools,
    /// Ten distraction tools added.
    TenDistractionTools,
}

impl Category {
    /// The category's name in tables and reports: upstream's, in snake case.
    pub fn name(self) -> &'static str {
        match self {
            Category::SingleToolCall => "single_tool_call",
            Category::MultipleToolCall => "multiple_tool_call",
            Category::SingleUserTurn => "single_user_turn",
            Category::MultipleUserTurn => "multiple_user_turn",
            Category::StateDependency => "state_dependency",
            Category::Canonicalization => "canonicalization",
            Category::Coreference => "coreference",
            Category::Disambiguation => "disambiguation",
            Category::InsufficientInformation => "insufficient_information",
            Category::NoDistractionTools => "no_distraction_tools",
            Category::ThreeDistractionTools => "three_distraction_tools",
            Category::TenDistractionTools => "ten_distraction_tools",
        }
    }

    /// Whether it says how many distraction tools the menu has (a column of its own in
    /// tables, not a category there).
    pub fn is_distraction_count(self) -> bool {
        matches!(
            self,
            Category::NoDistractionTools
                | Category::ThreeDistractionTools
                | Category::TenDistractionTools
        )
    }
}

/// The export's record of one scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    name: String,
    distraction_tools: u8,
    categories: Vec<Category>,
    max_messages: u32,
    tool_allow_list: Vec<String>,
    databases: BTreeMap<Namespace, Vec<Row>>,
    milestone_matcher: Value,
    minefield_matcher: Value,
}

/// One scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Upstream's name (unique across the variants).
    pub name: String,
    /// How many distraction tools the allow list carries: 0, 3 or 10.
    pub distraction_tools: u8,
    /// Its categories, in upstream's order.
    pub categories: Vec<Category>,
    /// The most messages the episode may add after the starting ones.
    pub max_messages: u32,
    /// The tools the agent may call, in upstream's seeded order (`end_conversation`
    /// included: it is the user's).
    pub tool_allow_list: Vec<String>,
    /// The world the episode starts from.
    pub starting_context: Context,
    /// Upstream's milestone matcher (`milestones`, `edge_list`), raw; the evaluator
    /// types it.
    pub milestone_matcher: Value,
    /// Upstream's minefield matcher, raw.
    pub minefield_matcher: Value,
    needs_internet: bool,
}

impl Scenario {
    /// The base scenario this variant extends: the name without its distraction suffix.
    pub fn base_name(&self) -> &str {
        base_name(&self.name)
    }

    /// Whether the allow list offers one of the five RapidAPI tools (perhaps only as a
    /// distraction).
    pub fn allows_internet_tools(&self) -> bool {
        self.tool_allow_list
            .iter()
            .any(|t| RAPID_API_TOOLS.contains(&t.as_str()))
    }

    /// Whether the task needs the internet: its base scenario (without distractions)
    /// allows a RapidAPI tool. A variant whose extra tools merely include one does not.
    pub fn needs_internet(&self) -> bool {
        self.needs_internet
    }
}

fn base_name(name: &str) -> &str {
    name.strip_suffix("_10_distraction_tools")
        .or_else(|| name.strip_suffix("_3_distraction_tools"))
        .unwrap_or(name)
}

/// Every scenario of the export, in its order.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenarios {
    all: Vec<Scenario>,
}

impl Scenarios {
    /// The scenarios compiled into the crate (`vendor/toolsandbox/scenarios.json.gz`).
    pub fn builtin() -> Result<Scenarios, DataError> {
        Scenarios::from_gzip(VendoredFile::Scenarios.builtin_bytes())
    }

    /// The scenarios from the bytes of `scenarios.json.gz`, refused unless they are the
    /// pinned file.
    pub fn from_gzip(gz: &[u8]) -> Result<Scenarios, DataError> {
        let json = data::scenarios_json(gz)?;
        let records: Vec<Record> = data::parse(VendoredFile::Scenarios, &json)?;
        let mut all: Vec<Scenario> = records
            .into_iter()
            .map(|r| Scenario {
                name: r.name,
                distraction_tools: r.distraction_tools,
                categories: r.categories,
                max_messages: r.max_messages,
                tool_allow_list: r.tool_allow_list,
                starting_context: Context::from_tables(r.databases),
                milestone_matcher: r.milestone_matcher,
                minefield_matcher: r.minefield_matcher,
                needs_internet: false,
            })
            .collect();
        let online: Vec<String> = all
            .iter()
            .filter(|s| s.distraction_tools == 0 && s.allows_internet_tools())
            .map(|s| s.name.clone())
            .collect();
        for s in &mut all {
            s.needs_internet = online.iter().any(|n| n == base_name(&s.name));
        }
        Ok(Scenarios { all })
    }

    /// Every scenario.
    pub fn all(&self) -> &[Scenario] {
        &self.all
    }

    /// The scenario of this name.
    pub fn get(&self, name: &str) -> Option<&Scenario> {
        self.all.iter().find(|s| s.name == name)
    }

    /// The base scenarios (no distraction tools).
    pub fn base(&self) -> impl Iterator<Item = &Scenario> {
        self.all.iter().filter(|s| s.distraction_tools == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_export_holds_129_base_scenarios_in_three_variants() {
        let s = Scenarios::builtin().unwrap();
        assert_eq!(s.all().len(), 387);
        let bases: BTreeSet<&str> = s.all().iter().map(Scenario::base_name).collect();
        assert_eq!(bases.len(), 129);
        assert_eq!(s.base().count(), 129);
        for k in [3, 10] {
            assert_eq!(
                s.all().iter().filter(|x| x.distraction_tools == k).count(),
                129
            );
        }
        let names: BTreeSet<&str> = s.all().iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names.len(), 387);
        assert!(s.all().iter().all(|x| x.max_messages == 30));
        assert!(s
            .all()
            .iter()
            .all(|x| x.tool_allow_list.iter().any(|t| t == "end_conversation")));
    }

    #[test]
    fn categories_of_the_base_scenarios() {
        let s = Scenarios::builtin().unwrap();
        let mut counts: BTreeMap<Category, usize> = BTreeMap::new();
        for x in s.base() {
            for c in &x.categories {
                *counts.entry(*c).or_default() += 1;
            }
        }
        let expected = [
            (Category::SingleToolCall, 19),
            (Category::MultipleToolCall, 82),
            (Category::SingleUserTurn, 73),
            (Category::MultipleUserTurn, 28),
            (Category::StateDependency, 24),
            (Category::Canonicalization, 59),
            (Category::InsufficientInformation, 28),
            (Category::NoDistractionTools, 129),
        ];
        assert_eq!(counts, expected.into_iter().collect());
    }

    #[test]
    fn thirty_eight_base_scenarios_need_the_internet() {
        let s = Scenarios::builtin().unwrap();
        assert_eq!(s.base().filter(|x| x.needs_internet()).count(), 38);
        // Every variant of a base that needs it needs it too, and only those.
        assert_eq!(s.all().iter().filter(|x| x.needs_internet()).count(), 114);
        // More variants merely offer a RapidAPI tool among their distractions.
        assert_eq!(
            s.all().iter().filter(|x| x.allows_internet_tools()).count(),
            194
        );
    }

    #[test]
    fn the_starting_world_is_upstreams() {
        let s = Scenarios::builtin().unwrap();
        let first = s.get("cellular_off").unwrap();
        let ctx = &first.starting_context;
        // Few-shot messages 2..=13, then the scenario's system and user messages.
        assert_eq!(ctx.max_sandbox_message_index(), 15);
        assert_eq!(ctx.first_user_sandbox_message_index(), 15);
        let settings = ctx.get_database(Namespace::Setting, None, false).unwrap();
        assert_eq!(settings.len(), 1);
        assert_eq!(settings[0]["cellular"], true);
        let contacts = ctx.get_database(Namespace::Contact, None, false).unwrap();
        assert_eq!(contacts.len(), 4);
        assert_eq!(first.milestone_matcher["edge_list"][0][1], 1);
    }
}
