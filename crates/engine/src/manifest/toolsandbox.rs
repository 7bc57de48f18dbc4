//! The `[toolsandbox]` table: which ToolSandbox scenarios a study plays, at which
//! numbers of distraction tools, resolved against the vendored scenarios.
//!
//! ```toml
//! [toolsandbox]
//! scenarios = "offline"          # every scenario whose task needs no internet
//! distraction_tools = [0, 3, 10] # menus with 0, 3 and 10 distraction tools appended
//! ```
//!
//! `scenarios` may instead list base scenarios by name (`["cellular_off", …]`). `user`
//! names who plays the user: `"scripted"` (the default, offline), or a live configuration
//! of the catalogue prompted as upstream prompts its user simulator. The
//! configurations, caps and repeats are the study's (each block's): every scenario is
//! played by every configuration at each of its caps, in each repeat. A manifest with
//! `[toolsandbox]` and no `[families]` table runs no family of tbb's own.
//!
//! Owns: the resolved [`ToolSandboxPart`] and its checks (a name ToolSandbox lacks, a
//! scenario that needs the internet, a distraction count the export does not hold),
//! each at its value's span.
//!
//! Never: plays or grades a scenario.

use serde::{Deserialize, Serialize};
use tbb_provider::config::{Catalogue, ProviderKind};
use tbb_provider::Configuration;
use tbb_toolsandbox::scenario::Scenarios;

use super::resolve::Sink;

/// `[toolsandbox]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawToolSandbox {
    /// `"offline"`, or a list of base scenario names.
    #[serde(default)]
    pub scenarios: Option<toml::Value>,
    /// Distraction tools appended to the menu: any of 0, 3 and 10.
    #[serde(default)]
    pub distraction_tools: Option<Vec<i64>>,
    /// Who plays the user: `"scripted"` (the default), or a live configuration of the
    /// catalogue prompted as upstream prompts its user simulator.
    #[serde(default)]
    pub user: Option<String>,
}

/// The distraction counts the export holds, each scenario at each.
pub const DISTRACTION_LEVELS: [u8; 3] = [0, 3, 10];

/// What a study plays of ToolSandbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSandboxPart {
    /// The scenarios, by their full names: per base scenario in the export's order, its
    /// variant at each distraction count in the order given.
    pub scenarios: Vec<String>,
    /// The distraction counts, in the order given.
    pub distraction_tools: Vec<u8>,
    /// Base scenarios the selection left out because their task needs the internet
    /// (for the report's note; `"offline"` leaves out every such one).
    pub needs_internet: Vec<String>,
    /// The live configuration that plays the user; `None`: the scripted user (and out
    /// of the hash, so a manifest without `user` keeps its hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Configuration>,
}

/// Resolves `[toolsandbox]` against the vendored scenarios.
pub(super) fn resolve(
    sink: &mut Sink<'_>,
    raw: &RawToolSandbox,
    scenarios: &Scenarios,
    catalogue: Option<&Catalogue>,
) -> Option<ToolSandboxPart> {
    let before = sink.problems.len();
    let user = resolve_user(sink, raw.user.as_deref(), catalogue);
    let levels: Vec<u8> = match &raw.distraction_tools {
        None => DISTRACTION_LEVELS.to_vec(),
        Some(list) if list.is_empty() => {
            sink.at(
                "toolsandbox.distraction_tools",
                "`distraction_tools` is empty",
                Some("give any of 0, 3 and 10, e.g. [0, 3, 10]".into()),
            );
            Vec::new()
        }
        Some(list) => {
            let mut levels = Vec::new();
            for (i, &n) in list.iter().enumerate() {
                let path = format!("toolsandbox.distraction_tools.{i}");
                match DISTRACTION_LEVELS.iter().find(|&&l| i64::from(l) == n) {
                    Some(&l) if levels.contains(&l) => {
                        sink.at(&path, format!("{n} is given twice"), None);
                    }
                    Some(&l) => levels.push(l),
                    None => sink.at(
                        &path,
                        format!("ToolSandbox's export has no scenarios with {n} distraction tools"),
                        Some("give any of 0, 3 and 10".into()),
                    ),
                }
            }
            levels
        }
    };
    let bases: Vec<&str> = scenarios.base().map(|s| s.name.as_str()).collect();
    let needs_internet: Vec<String> = scenarios
        .base()
        .filter(|s| s.needs_internet())
        .map(|s| s.name.clone())
        .collect();
    let chosen: Vec<&str> = match &raw.scenarios {
        None => bases
            .iter()
            .copied()
            .filter(|b| !needs_internet.iter().any(|n| n == b))
            .collect(),
        Some(toml::Value::String(s)) if s == "offline" => bases
            .iter()
            .copied()
            .filter(|b| !needs_internet.iter().any(|n| n == b))
            .collect(),
        Some(toml::Value::Array(items)) => {
            let mut chosen = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let path = format!("toolsandbox.scenarios.{i}");
                let Some(name) = item.as_str() else {
                    sink.at(&path, "a scenario is named by a string", None);
                    continue;
                };
                match bases.iter().find(|&&b| b == name) {
                    Some(_) if needs_internet.iter().any(|n| n == name) => sink.at(
                        &path,
                        format!("scenario `{name}` allows a tool that needs the internet (RapidAPI), which tbb does not call"),
                        Some("leave it out; docs/toolsandbox.md lists the offline scenarios' rule".into()),
                    ),
                    Some(&b) if chosen.contains(&b) => {
                        sink.at(&path, format!("`{name}` is given twice"), None);
                    }
                    Some(&b) => chosen.push(b),
                    None => sink.unknown(
                        &path,
                        "base scenario",
                        name,
                        bases.iter().copied(),
                        "name a scenario without its distraction suffix",
                    ),
                }
            }
            if items.is_empty() {
                sink.at(
                    "toolsandbox.scenarios",
                    "`scenarios` is empty",
                    Some("write \"offline\" for every scenario that runs offline".into()),
                );
            }
            chosen
        }
        Some(_) => {
            sink.at(
                "toolsandbox.scenarios",
                "`scenarios` is \"offline\" or a list of base scenario names",
                None,
            );
            Vec::new()
        }
    };
    let mut names = Vec::new();
    for base in &chosen {
        for &level in &levels {
            let variant = scenarios
                .all()
                .iter()
                .find(|s| s.base_name() == *base && s.distraction_tools == level);
            match variant {
                Some(s) => names.push(s.name.clone()),
                None => sink.at(
                    "toolsandbox.scenarios",
                    format!("the export has no `{base}` with {level} distraction tools"),
                    None,
                ),
            }
        }
    }
    (sink.problems.len() == before).then_some(ToolSandboxPart {
        scenarios: names,
        distraction_tools: levels,
        needs_internet: match &raw.scenarios {
            Some(toml::Value::Array(_)) => Vec::new(),
            _ => needs_internet,
        },
        user,
    })
}

/// The configuration `user` names, when it names one: it must be a live configuration
/// of the catalogue, enabled (the simulated panel plays agents, not users).
fn resolve_user(
    sink: &mut Sink<'_>,
    user: Option<&str>,
    catalogue: Option<&Catalogue>,
) -> Option<Configuration> {
    let name = user.filter(|u| *u != "scripted")?;
    let catalogue = catalogue?;
    let path = "toolsandbox.user";
    let Some(config) = catalogue.get(name) else {
        let names = catalogue.configurations.iter().map(|c| c.name.as_str());
        sink.unknown(
            path,
            "configuration",
            name,
            names,
            "write \"scripted\", or name a live configuration of the catalogue",
        );
        return None;
    };
    if config.provider == ProviderKind::Sim {
        sink.at(
            path,
            format!("`{name}` is a simulated configuration: the panel plays agents, not users"),
            Some("write \"scripted\" for the offline user, or name a live configuration".into()),
        );
        return None;
    }
    if !config.enabled {
        sink.at(
            path,
            format!("configuration `{name}` is disabled in the catalogue"),
            Some(format!(
                "enable it in {} (`enabled = true`, with its key in ${})",
                catalogue.path.display(),
                config.api_key_env.as_deref().unwrap_or("its api_key_env")
            )),
        );
        return None;
    }
    Some(config.clone())
}

/// One way the study plays every scenario: a configuration at a cap in a repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScenarioCondition {
    /// Index into [`super::Manifest::configurations`].
    pub config: usize,
    /// Completion cap.
    pub cap: u32,
    /// Repeat index.
    pub repeat: u32,
}

impl super::Manifest {
    /// The conditions every ToolSandbox scenario is played under: each block's
    /// configurations at each of its caps in each of its repeats, the first time a
    /// (configuration, cap, repeat) comes up (blocks differ in tbb's own design, not in
    /// how a scenario is played). Empty without `[toolsandbox]`.
    pub fn scenario_conditions(&self) -> Vec<ScenarioCondition> {
        if self.toolsandbox.is_none() {
            return Vec::new();
        }
        let mut out: Vec<ScenarioCondition> = Vec::new();
        for block in &self.blocks {
            for name in &block.configurations {
                let Some(config) = self.configurations.iter().position(|c| &c.name == name) else {
                    continue;
                };
                for &cap in block.caps_for(name) {
                    for repeat in block.repeat_range() {
                        let c = ScenarioCondition {
                            config,
                            cap,
                            repeat,
                        };
                        if !out.contains(&c) {
                            out.push(c);
                        }
                    }
                }
            }
        }
        out
    }

    /// ToolSandbox episodes the manifest asks for.
    pub fn scenario_episode_count(&self) -> u64 {
        self.toolsandbox.as_ref().map_or(0, |t| {
            (t.scenarios.len() * self.scenario_conditions().len()) as u64
        })
    }
}
