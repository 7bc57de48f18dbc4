//! Stage 2: checks a [`RawManifest`] against the families and the configuration
//! catalogue and resolves it into a [`Manifest`]'s parts.
//!
//! Every check runs, whatever failed before it, and each failure becomes one
//! [`Problem`] at the span of the value at fault (or naming the override it came from),
//! with "did you mean" for misspelled names.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::error::Problem;
use super::layers::{Layers, Origin};
use super::raw::{RawBudgets, RawCell, RawCells, RawConfigurations, RawFamilies, RawManifest};
use super::{Analysis, Block, Budgets, Schedule, CALL_SLACK};
use tbb_core::compile::cell::{Cell, CellError, Encoding, Routing, Workflow};
use tbb_core::family::{closest, FamilySet};
use tbb_core::grade::EPISODE_BUDGET;
use tbb_diag::{limits, names};
use tbb_harness::arm::{Actor, Arm, ArmForm, Delivery, Menu};
use tbb_harness::{PromptVariant, COMPLETION_CAP};
use tbb_provider::config::{Catalogue, ProviderKind};
use tbb_provider::Configuration;

/// Collects problems, placing each at its value's origin.
pub(super) struct Sink<'a> {
    pub layers: &'a Layers,
    pub src: tbb_diag::source::SourceFile,
    pub problems: Vec<Problem>,
}

impl Sink<'_> {
    /// A problem with the value at `path`.
    pub fn at(&mut self, path: &str, message: impl Into<String>, help: Option<String>) {
        let message = message.into();
        let (message, span) = match self.layers.origin(path) {
            Origin::File(span) => (message, Some(span)),
            Origin::Override(name) => (format!("{name}: {message}"), None),
            Origin::Default => (message, None),
        };
        let (src, span) = self.src.at(span);
        self.problems.push(Problem {
            message,
            src,
            span,
            label: "here".into(),
            help,
        });
    }

    /// An unknown name at `path`, with "did you mean" (or the list when it is short).
    pub(super) fn unknown<'o>(
        &mut self,
        path: &str,
        what: &str,
        name: &str,
        options: impl Iterator<Item = &'o str> + Clone,
        list_hint: &str,
    ) {
        let help = match closest(name, options.clone()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if list_hint.is_empty() => {
                format!(
                    "expected one of: {}",
                    options.collect::<Vec<_>>().join(", ")
                )
            }
            None => list_hint.to_string(),
        };
        self.at(path, format!("unknown {what} `{name}`"), Some(help));
    }
}

/// What stage 2 resolves (everything of a manifest but its identity and hash).
pub(super) struct Resolved {
    pub families: Vec<String>,
    pub cells: Vec<Cell>,
    pub configurations: Vec<Configuration>,
    pub arms: Vec<Arm>,
    pub blocks: Vec<Block>,
    pub budgets: Budgets,
    pub analyses: Vec<Analysis>,
    pub toolsandbox: Option<super::toolsandbox::ToolSandboxPart>,
}

/// The name of the one block of a manifest without `[[blocks]]`.
pub const MAIN_BLOCK: &str = "main";

/// Resolves every section; `None` when any problem was found (they are in the sink).
pub(super) fn resolve(
    raw: &RawManifest,
    sink: &mut Sink<'_>,
    families: &FamilySet,
    catalogue: Option<&Catalogue>,
    models: Option<&[String]>,
) -> Option<Resolved> {
    let before = sink.problems.len();
    check_study_name(raw, sink);
    check_replaced_keys(raw, sink);
    let arms = resolve_arms(raw, sink);
    let budgets = resolve_budgets(raw, sink);
    let blocks = resolve_blocks(raw, sink, families, catalogue, models, &arms);
    check_conditions_once(sink, &blocks, &arms);
    // The unions every block draws from, in family-set, first-given and catalogue order.
    let family_names: Vec<String> = families
        .families
        .iter()
        .filter(|f| blocks.iter().any(|b| b.families.contains(&f.name)))
        .map(|f| f.name.clone())
        .collect();
    let mut cells: Vec<Cell> = Vec::new();
    let mut seen = HashSet::new();
    for c in blocks.iter().flat_map(|b| &b.cells) {
        if seen.insert(*c) {
            cells.push(*c);
        }
    }
    let configurations: Vec<Configuration> = catalogue
        .map(|cat| {
            cat.configurations
                .iter()
                .filter(|c| blocks.iter().any(|b| b.configurations.contains(&c.name)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let analyses = resolve_analyses(raw, sink);
    let toolsandbox =
        raw.toolsandbox.as_ref().and_then(
            |t| match tbb_toolsandbox::scenario::Scenarios::builtin() {
                Ok(scenarios) => super::toolsandbox::resolve(sink, t, &scenarios, catalogue),
                Err(e) => {
                    sink.at(
                    "toolsandbox",
                    format!("the vendored ToolSandbox scenarios do not read: {e}"),
                    Some(
                        "vendor/toolsandbox/ is built into tbb; rebuild it from a clean checkout"
                            .into(),
                    ),
                );
                    None
                }
            },
        );
    // Names are checked against a design only when it resolved whole: a block that
    // failed would make every name it holds look unknown.
    if sink.problems.len() == before {
        let names: Vec<String> = configurations.iter().map(|c| c.name.clone()).collect();
        let design = tbb_analysis::Design {
            plays_toolsandbox: toolsandbox.is_some(),
            ..super::design_of_parts(&blocks, &arms, &cells, &names)
        };
        let catalogue: Vec<String> = catalogue
            .map(|c| c.configurations.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default();
        check_analysis_names(sink, &analyses, &design, &catalogue);
    }
    let resolved = Resolved {
        families: family_names,
        cells,
        configurations,
        arms,
        blocks,
        budgets,
        analyses,
        toolsandbox,
    };
    (sink.problems.len() == before).then_some(resolved)
}

/// `lanes` and `repairs` became arms: say how to write them as `[[arms]]`.
fn check_replaced_keys(raw: &RawManifest, sink: &mut Sink<'_>) {
    let names = |v: &Option<toml::Value>| -> Option<Vec<String>> {
        v.as_ref().map(|v| match v {
            toml::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().unwrap_or_default().to_string())
                .collect(),
            other => vec![other.to_string()],
        })
    };
    let lanes = names(&raw.lanes);
    let repairs = names(&raw.repairs);
    if lanes.is_none() && repairs.is_none() {
        return;
    }
    let prompt_of = |repair: &str| match repair {
        "workflow_prompt" => "workflow",
        "interface_guide" => "interface_guide",
        _ => "base",
    };
    let lanes = lanes.unwrap_or_else(|| vec!["routed".into()]);
    let repairs = repairs.unwrap_or_else(|| vec!["none".into()]);
    let mut example = String::new();
    for lane in &lanes {
        for repair in &repairs {
            let name = if repairs.len() == 1 {
                lane.clone()
            } else {
                format!("{lane}-{repair}")
            };
            example.push_str(&format!(
                "[[arms]]\nname = \"{name}\"\nmenu = \"{lane}\"\nprompt = \"{}\"\n\n",
                prompt_of(repair)
            ));
        }
    }
    let at = if raw.lanes.is_some() {
        "lanes"
    } else {
        "repairs"
    };
    sink.at(
        at,
        "`lanes` and `repairs` were replaced by named arms (`[[arms]]`)",
        Some(format!(
            "write one arm per lane and repair instead:\n\n{}",
            example.trim_end()
        )),
    );
}

/// The `[[arms]]` (one `baseline` arm when absent).
fn resolve_arms(raw: &RawManifest, sink: &mut Sink<'_>) -> Vec<Arm> {
    let Some(list) = &raw.arms else {
        return vec![Arm {
            name: "baseline".into(),
            form: ArmForm::baseline(),
            completion_cap: None,
        }];
    };
    if list.is_empty() {
        sink.at(
            "arms",
            "`arms` is empty",
            Some("give at least one `[[arms]]` entry, or none for the baseline arm".into()),
        );
    }
    let prompts = PromptVariant::NAMES;
    let mut out: Vec<Arm> = Vec::new();
    // Sets, not scans of `out`: every duplicate check is linear in the manifest.
    let mut declared = HashSet::new();
    for (i, a) in list.iter().enumerate() {
        let at = format!("arms.{i}");
        let mut ok = check_identifier(sink, &format!("{at}.name"), "arm", &a.name);
        if !declared.insert(a.name.as_str()) {
            ok = false;
            sink.at(
                &format!("{at}.name"),
                format!("arm `{}` is declared twice", a.name),
                Some("give each arm its own name".into()),
            );
        }
        let mut component = |key: &str, given: &Option<String>, table: &[(&str, u8)]| {
            let Some(name) = given else { return Some(0) };
            let found = table.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
            if found.is_none() {
                sink.unknown(
                    &format!("{at}.{key}"),
                    &format!("{key} component"),
                    name,
                    table.iter().map(|(n, _)| *n),
                    "",
                );
            }
            found
        };
        let prompt = component("prompt", &a.prompt, &positions(&prompts));
        let menu = component("menu", &a.menu, &positions(&Menu::NAMES));
        let delivery = component("delivery", &a.delivery, &positions(&Delivery::NAMES));
        let actor = component("actor", &a.actor, &positions(&Actor::NAMES));
        let cap = a
            .completion_cap
            .and_then(|c| resolve_caps(sink, &format!("{at}.completion_cap"), &[c]).pop());
        if a.completion_cap.is_some() && cap.is_none() {
            ok = false;
        }
        let (Some(p), Some(m), Some(d), Some(c)) = (prompt, menu, delivery, actor) else {
            continue;
        };
        let Some(menu) = retrieval_k(sink, &at, Menu::NAMES[m as usize].1, a.k) else {
            continue;
        };
        if ok {
            out.push(Arm {
                name: a.name.clone(),
                form: ArmForm {
                    prompt: prompts[p as usize].1,
                    menu,
                    delivery: Delivery::NAMES[d as usize].1,
                    actor: Actor::NAMES[c as usize].1,
                },
                completion_cap: cap,
            });
        }
    }
    out
}

// The retriever's largest menu and the limit the manifest checks are one number.
const _: () = assert!(limits::RETRIEVAL_K.max == Menu::MAX_K as u64);

/// A retrieval menu takes its `k` ([`limits::RETRIEVAL_K`]) from the arm; the other menus
/// take none. `None` (with the problem reported) when `k` is missing, out of range or
/// given to another menu.
fn retrieval_k(sink: &mut Sink<'_>, at: &str, menu: Menu, k: Option<i64>) -> Option<Menu> {
    match (menu, k) {
        (Menu::Retrieval { .. }, Some(k)) => {
            within(sink, &format!("{at}.k"), k, &limits::RETRIEVAL_K).map(|k| Menu::Retrieval { k })
        }
        (Menu::Retrieval { .. }, None) => {
            sink.at(
                &format!("{at}.menu"),
                "a `retrieval` menu needs `k`, how many tool schemas it keeps",
                Some("add `k = 8` (or another size up to 128) to the arm".into()),
            );
            None
        }
        (_, Some(_)) => {
            sink.at(
                &format!("{at}.k"),
                "`k` belongs to a `retrieval` menu only",
                Some("drop `k`, or set `menu = \"retrieval\"`".into()),
            );
            None
        }
        (menu, None) => Some(menu),
    }
}

/// Each name of a component's table with its position.
fn positions<T>(names: &[(&'static str, T)]) -> Vec<(&'static str, u8)> {
    names
        .iter()
        .enumerate()
        .map(|(k, (n, _))| (*n, k as u8))
        .collect()
}

/// A name used in rows and paths: an identifier ([`names::RULE`]).
fn check_identifier(sink: &mut Sink<'_>, path: &str, what: &str, name: &str) -> bool {
    match names::check(name) {
        Ok(()) => true,
        Err(e) => {
            sink.at(
                path,
                format!("{what} name {e}"),
                Some(format!("a {what} name is an identifier: {}", names::RULE)),
            );
            false
        }
    }
}

/// The blocks: each `[[blocks]]` entry over the top-level defaults, or one `main`
/// block of the top level. Each part is resolved where it was written, so a problem is
/// reported once, at its span. `models` (the configurations of `--model`), when given,
/// replace every block's selection, and the caps of the configurations they replace are
/// left out.
fn resolve_blocks(
    raw: &RawManifest,
    sink: &mut Sink<'_>,
    set: &FamilySet,
    catalogue: Option<&Catalogue>,
    models: Option<&[String]>,
    arms: &[Arm],
) -> Vec<Block> {
    let blocks = raw.blocks.as_deref();
    let inherits = |f: &dyn Fn(&super::raw::RawBlock) -> bool| {
        blocks.is_none_or(|list| list.iter().any(|b| !f(b)))
    };
    // Top-level parts, resolved once and only when some block takes them.
    // A study of ToolSandbox alone writes no `[families]`: it then runs none of ours.
    let families = inherits(&|b| b.families.is_some()).then(|| {
        if raw.toolsandbox.is_some() && raw.families.is_unset() {
            Vec::new()
        } else {
            resolve_families(sink, "families", &raw.families, set)
        }
    });
    let cells = inherits(&|b| b.cells.is_some()).then(|| resolve_cells(sink, "cells", &raw.cells));
    let configurations = match catalogue {
        Some(_) if models.is_some() => models.map(<[String]>::to_vec),
        Some(cat) if inherits(&|b| b.configurations.is_some()) => Some(resolve_configurations(
            sink,
            "configurations",
            &raw.configurations,
            cat,
        )),
        _ => None,
    };
    let repeats = limit_or(sink, "repeats", raw.repeats, &limits::REPEATS, 1);
    let schedule = resolve_schedule(sink, "schedule", raw.schedule.as_deref());
    let all_arms: Vec<usize> = (0..arms.len()).collect();
    let replaced = models.is_some();
    let top_caps = |sink: &mut Sink<'_>, configs: &[String]| {
        resolve_caps_of(sink, "budgets", &raw.budgets, configs, replaced)
    };
    let Some(list) = blocks else {
        let configurations = configurations.unwrap_or_default();
        let (completion_caps, configuration_caps) = top_caps(sink, &configurations);
        return vec![Block {
            name: MAIN_BLOCK.into(),
            families: families.unwrap_or_default(),
            cells: cells.unwrap_or_default(),
            configurations,
            arms: all_arms,
            completion_caps,
            configuration_caps,
            repeats,
            first_repeat: 0,
            schedule,
        }];
    };
    if list.is_empty() {
        sink.at(
            "blocks",
            "`blocks` is empty",
            Some("give at least one `[[blocks]]` entry, or none for one block of the top-level design".into()),
        );
    }
    let mut out: Vec<Block> = Vec::new();
    let mut declared = HashSet::new();
    let arm_by_name: HashMap<&str, usize> = arms
        .iter()
        .enumerate()
        .map(|(k, a)| (a.name.as_str(), k))
        .collect();
    for (i, b) in list.iter().enumerate() {
        let at = format!("blocks.{i}");
        check_identifier(sink, &format!("{at}.name"), "block", &b.name);
        if !declared.insert(b.name.as_str()) {
            sink.at(
                &format!("{at}.name"),
                format!("block `{}` is declared twice", b.name),
                Some("give each block its own name".into()),
            );
        }
        let fams = match &b.families {
            Some(f) => resolve_families(sink, &format!("{at}.families"), f, set),
            None => families.clone().unwrap_or_default(),
        };
        let block_cells = match &b.cells {
            Some(c) => resolve_cells(sink, &format!("{at}.cells"), c),
            None => cells.clone().unwrap_or_default(),
        };
        let configs = match (&b.configurations, catalogue) {
            (Some(_), Some(_)) if replaced => configurations.clone().unwrap_or_default(),
            (Some(c), Some(cat)) => {
                resolve_configurations(sink, &format!("{at}.configurations"), c, cat)
            }
            _ => configurations.clone().unwrap_or_default(),
        };
        let (completion_caps, configuration_caps) = match &b.budgets {
            Some(budgets) => {
                for (key, given) in [
                    ("episode_budget", budgets.episode_budget.is_some()),
                    ("call_slack", budgets.call_slack.is_some()),
                ] {
                    if given {
                        sink.at(
                            &format!("{at}.budgets.{key}"),
                            format!("`{key}` is the study's, not a block's"),
                            Some(format!(
                                "set `budgets.{key}` at the top level of the manifest"
                            )),
                        );
                    }
                }
                resolve_caps_of(sink, &format!("{at}.budgets"), budgets, &configs, replaced)
            }
            None => top_caps(sink, &configs),
        };
        let block_arms = match &b.arms {
            None => all_arms.clone(),
            Some(names) => {
                if names.is_empty() {
                    sink.at(&format!("{at}.arms"), "the block names no arm", None);
                }
                let mut chosen = Vec::new();
                let mut listed = HashSet::new();
                for (j, name) in names.iter().enumerate() {
                    match arm_by_name.get(name.as_str()).copied() {
                        Some(k) if !listed.insert(k) => sink.at(
                            &format!("{at}.arms.{j}"),
                            format!("arm `{name}` is listed twice"),
                            None,
                        ),
                        Some(k) => chosen.push(k),
                        None => sink.unknown(
                            &format!("{at}.arms.{j}"),
                            "arm",
                            name,
                            arms.iter().map(|a| a.name.as_str()),
                            "",
                        ),
                    }
                }
                chosen
            }
        };
        out.push(Block {
            name: b.name.clone(),
            families: fams,
            cells: block_cells,
            configurations: configs,
            arms: block_arms,
            completion_caps,
            configuration_caps,
            repeats: match b.repeats {
                Some(_) => limit_or(
                    sink,
                    &format!("{at}.repeats"),
                    b.repeats,
                    &limits::REPEATS,
                    1,
                ),
                None => repeats,
            },
            first_repeat: limit_or(
                sink,
                &format!("{at}.first_repeat"),
                b.first_repeat,
                &limits::REPEAT_INDEX,
                0,
            ),
            schedule: match &b.schedule {
                Some(s) => resolve_schedule(sink, &format!("{at}.schedule"), Some(s)),
                None => schedule,
            },
        });
    }
    out
}

fn resolve_schedule(sink: &mut Sink<'_>, path: &str, given: Option<&str>) -> Schedule {
    let Some(name) = given else {
        return Schedule::default();
    };
    match Schedule::NAMES.iter().find(|(n, _)| *n == name) {
        Some((_, s)) => *s,
        None => {
            sink.unknown(
                path,
                "schedule",
                name,
                Schedule::NAMES.iter().map(|(n, _)| *n),
                "",
            );
            Schedule::default()
        }
    }
}

/// Every episode once: two arms of a block with the same components at the same cap,
/// or two blocks sharing a condition, would run one episode twice under one key.
fn check_conditions_once(sink: &mut Sink<'_>, blocks: &[Block], arms: &[Arm]) {
    for (i, b) in blocks.iter().enumerate() {
        let at = if blocks.len() == 1 && b.name == MAIN_BLOCK {
            "arms".to_string()
        } else {
            format!("blocks.{i}.arms")
        };
        for c in &b.configurations {
            let units = b.units(arms, c);
            let mut first: HashMap<(ArmForm, u32), usize> = HashMap::new();
            let same = units
                .iter()
                .find_map(|u| match first.entry((arms[u.arm].form, u.cap)) {
                    std::collections::hash_map::Entry::Occupied(x) => {
                        Some((*x.get(), u.arm, u.cap))
                    }
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(u.arm);
                        None
                    }
                });
            if let Some((a, b2, cap)) = same {
                sink.at(
                    &at,
                    format!(
                        "arms `{}` and `{}` are the same episode: the same components at completion cap {cap}",
                        arms[a].name, arms[b2].name
                    ),
                    Some("give the second arm another component or cap, or run it as another repeat".into()),
                );
                break;
            }
        }
    }
    if blocks.len() < 2 {
        return;
    }
    let mut seen: std::collections::BTreeMap<(&str, Cell, &str, ArmForm, u32, u32), usize> =
        std::collections::BTreeMap::new();
    for (i, b) in blocks.iter().enumerate() {
        let mut clash: Option<(usize, String)> = None;
        'block: for f in &b.families {
            for cell in &b.cells {
                for c in &b.configurations {
                    for u in b.units(arms, c) {
                        for r in b.repeat_range() {
                            let key = (f.as_str(), *cell, c.as_str(), arms[u.arm].form, u.cap, r);
                            match seen.get(&key) {
                                Some(&other) if other != i => {
                                    clash = Some((
                                        other,
                                        format!(
                                            "{f} at {cell}, {c}, arm `{}`, cap {}, repeat {r}",
                                            arms[u.arm].name, u.cap
                                        ),
                                    ));
                                    break 'block;
                                }
                                _ => {
                                    seen.insert(key, i);
                                }
                            }
                        }
                    }
                }
            }
        }
        if let Some((other, what)) = clash {
            sink.at(
                &format!("blocks.{i}"),
                format!(
                    "block `{}` repeats an episode of block `{}`: {what}",
                    b.name, blocks[other].name
                ),
                Some("blocks must not share a condition; give one of them other families, cells, configurations, arms or repeats".into()),
            );
        }
    }
}

/// Whether `name` can name a study (and its outputs directory).
pub(crate) fn is_study_name(name: &str) -> bool {
    names::is_identifier(name)
}

fn check_study_name(raw: &RawManifest, sink: &mut Sink<'_>) {
    if let Err(e) = names::check(&raw.study.name) {
        sink.at(
            "study.name",
            format!("study name {e}"),
            Some(format!(
                "a study name is an identifier (it names outputs/<study>/): {}",
                names::RULE
            )),
        );
    }
}

fn resolve_families(
    sink: &mut Sink<'_>,
    at: &str,
    f: &RawFamilies,
    set: &FamilySet,
) -> Vec<String> {
    let filtered =
        f.intents.is_some() || f.domains.is_some() || f.names.is_some() || f.splits.is_some();
    match f.select.as_deref() {
        None | Some("all") => {}
        Some(other) => sink.at(
            &format!("{at}.select"),
            format!("unknown selection `{other}`"),
            Some("`select = \"all\"` takes every family; to choose, use intents, domains, names or splits".into()),
        ),
    }
    if f.select.is_some() && filtered {
        sink.at(
            &format!("{at}.select"),
            "`select = \"all\"` cannot be combined with intents, domains, names or splits",
            Some("remove `select`, or remove the filters".into()),
        );
    }
    let intents = names_in(
        sink,
        &format!("{at}.intents"),
        "intent",
        f.intents.as_deref(),
        set.intents.iter().map(|i| i.name()),
        "run `tbb families` to list the intents",
    );
    let domains = names_in(
        sink,
        &format!("{at}.domains"),
        "domain",
        f.domains.as_deref(),
        ["accounting", "email", "file", "calendar"].into_iter(),
        "",
    );
    let names = names_in(
        sink,
        &format!("{at}.names"),
        "family",
        f.names.as_deref(),
        set.families.iter().map(|f| f.name.as_str()),
        "run `tbb families` to list the families",
    );
    let splits = names_in(
        sink,
        &format!("{at}.splits"),
        "split",
        f.splits.as_deref(),
        ["core", "holdout", "frontier"].into_iter(),
        "",
    );
    let pass = |list: &Option<Vec<String>>, value: &str| {
        list.as_ref().is_none_or(|l| l.iter().any(|x| x == value))
    };
    let chosen: Vec<String> = set
        .families
        .iter()
        .filter(|fam| {
            pass(&intents, fam.intent.name())
                && pass(&domains, fam.domain().name())
                && pass(&names, &fam.name)
                && pass(&splits, fam.split().name())
        })
        .map(|fam| fam.name.clone())
        .collect();
    let clean = [&intents, &domains, &names, &splits]
        .iter()
        .all(|l| l.as_ref().is_none_or(|l| !l.is_empty()));
    if chosen.is_empty() && clean {
        sink.at(
            at,
            "the family selection is empty",
            Some("no family passes every filter given; filters combine with AND".into()),
        );
    }
    chosen
}

/// Checks a list of names against the known ones; returns the known ones given.
fn names_in<'o>(
    sink: &mut Sink<'_>,
    path: &str,
    what: &str,
    given: Option<&[String]>,
    options: impl Iterator<Item = &'o str> + Clone,
    list_hint: &str,
) -> Option<Vec<String>> {
    let given = given?;
    let mut known = Vec::new();
    for (i, name) in given.iter().enumerate() {
        if options.clone().any(|o| o == name) {
            known.push(name.clone());
        } else {
            sink.unknown(
                &format!("{path}.{i}"),
                what,
                name,
                options.clone(),
                list_hint,
            );
        }
    }
    Some(known)
}

fn resolve_cells(sink: &mut Sink<'_>, at: &str, cells: &RawCells) -> Vec<Cell> {
    match (&cells.preset, &cells.list) {
        (Some(_), Some(_)) => {
            sink.at(
                &format!("{at}.preset"),
                "`preset` and `[[cells.list]]` cannot both be given",
                Some("remove one of them".into()),
            );
            Vec::new()
        }
        (Some(p), None) if p != "capacity" => {
            sink.unknown(
                &format!("{at}.preset"),
                "cell preset",
                p,
                ["capacity"].into_iter(),
                "",
            );
            Vec::new()
        }
        (_, None) => Cell::capacity(),
        (None, Some(list)) => {
            if list.is_empty() {
                sink.at(&format!("{at}.list"), "the cell list is empty", None);
            }
            let mut out: Vec<Cell> = Vec::new();
            // A set, not `out.contains`: generated lists can hold thousands of cells.
            let mut seen = std::collections::BTreeSet::new();
            for (i, rc) in list.iter().enumerate() {
                if let Some(cell) = resolve_cell(sink, &format!("{at}.list.{i}"), rc) {
                    if !seen.insert(cell.normalized()) {
                        sink.at(
                            &format!("{at}.list.{i}"),
                            format!("cell {cell} is listed twice"),
                            Some("remove the repeated entry".into()),
                        );
                    } else {
                        out.push(cell.normalized());
                    }
                }
            }
            out
        }
    }
}

fn resolve_cell(sink: &mut Sink<'_>, path: &str, rc: &RawCell) -> Option<Cell> {
    let w = level::<Workflow>(
        sink,
        &format!("{path}.w"),
        &rc.w,
        &["low", "medium", "high"],
    );
    let d = level::<Encoding>(
        sink,
        &format!("{path}.d"),
        &rc.d,
        &["raw", "compact", "typed", "linked"],
    );
    let r = match &rc.r {
        Some(r) => level::<Routing>(sink, &format!("{path}.r"), r, &["low", "high"]),
        None => Some(Routing::Low),
    };
    let v = u16::try_from(rc.v).unwrap_or(0);
    let depth = rc.depth.map(|d| u8::try_from(d).unwrap_or(u8::MAX));
    let cell = Cell {
        v,
        w: w.unwrap_or(Workflow::Low),
        d: d.unwrap_or(Encoding::Raw),
        r: r.unwrap_or(Routing::Low),
        depth,
    };
    let mut ok = w.is_some() && d.is_some() && r.is_some();
    match cell.validate() {
        Ok(()) => {}
        Err(CellError::MenuSize(_)) => {
            ok = false;
            sink.at(
                &format!("{path}.v"),
                format!("menu size V = {} is not a level of the benchmark", rc.v),
                Some("V must be one of 8, 32, 128".into()),
            );
        }
        Err(CellError::Depth(_)) => {
            ok = false;
            sink.at(
                &format!("{path}.depth"),
                format!(
                    "depth {} is not an even number of calls between 2 and 30",
                    rc.depth.unwrap_or_default()
                ),
                Some("the frontier depths are 2, 6, 14, 30".into()),
            );
        }
        Err(e) => {
            ok = false;
            sink.at(path, e.to_string(), None);
        }
    }
    ok.then_some(cell)
}

fn level<T: std::str::FromStr>(
    sink: &mut Sink<'_>,
    path: &str,
    value: &str,
    options: &[&str],
) -> Option<T> {
    match value.parse::<T>() {
        Ok(l) => Some(l),
        Err(_) => {
            let axis = path.rsplit('.').next().unwrap_or_default().to_uppercase();
            sink.unknown(
                path,
                &format!("level of {axis}"),
                value,
                options.iter().copied(),
                "",
            );
            None
        }
    }
}

fn resolve_configurations(
    sink: &mut Sink<'_>,
    at: &str,
    c: &RawConfigurations,
    catalogue: &Catalogue,
) -> Vec<String> {
    let all = &catalogue.configurations;
    let mut chosen = vec![false; all.len()];
    let mut by = vec![String::new(); all.len()];
    if let Some(names) = &c.names {
        for (i, name) in names.iter().enumerate() {
            match all.iter().position(|x| &x.name == name) {
                Some(k) => {
                    chosen[k] = true;
                    by[k] = format!("{at}.names.{i}");
                }
                None => {
                    let listed = format!(
                        "`tbb configs --configs {}` lists it",
                        catalogue.path.display()
                    );
                    let help = match closest(name, all.iter().map(|x| x.name.as_str())) {
                        Some(s) => format!("did you mean `{s}`? {listed}"),
                        None => listed,
                    };
                    sink.at(
                        &format!("{at}.names.{i}"),
                        format!(
                            "unknown configuration `{name}`: the catalogue {} has none of that name",
                            catalogue.path.display()
                        ),
                        Some(help),
                    );
                }
            }
        }
    }
    if let Some(orgs) = &c.organizations {
        for (i, org) in orgs.iter().enumerate() {
            let mut any = false;
            for (k, x) in all.iter().enumerate() {
                if &x.organization == org {
                    any = true;
                    if !chosen[k] {
                        chosen[k] = true;
                        by[k] = format!("{at}.organizations.{i}");
                    }
                }
            }
            if !any {
                let mut orgs: Vec<&str> = all.iter().map(|x| x.organization.as_str()).collect();
                orgs.dedup();
                sink.unknown(
                    &format!("{at}.organizations.{i}"),
                    "organization",
                    org,
                    orgs.into_iter(),
                    "",
                );
            }
        }
    }
    if c.all_sim == Some(true) {
        for (k, x) in all.iter().enumerate() {
            if x.provider == ProviderKind::Sim && !chosen[k] {
                chosen[k] = true;
                by[k] = format!("{at}.all_sim");
            }
        }
    }
    let mut out = Vec::new();
    for (k, x) in all.iter().enumerate() {
        if !chosen[k] {
            continue;
        }
        if !x.enabled {
            sink.at(
                &by[k],
                format!("configuration `{}` is disabled in the catalogue", x.name),
                Some(format!(
                    "enable it in {} (`enabled = true`, with its key in ${}), or do not select it",
                    catalogue.path.display(),
                    x.api_key_env.as_deref().unwrap_or("its api_key_env")
                )),
            );
            continue;
        }
        out.push(x.name.clone());
    }
    if out.is_empty() && c.names.is_none() && c.organizations.is_none() && c.all_sim != Some(true) {
        sink.at(
            at,
            "no configuration is selected",
            Some("add `[configurations]` with `names = [...]`, `organizations = [...]` or `all_sim = true`".into()),
        );
    }
    out
}

// The call slack the manifest accepts is the one the compiler applies.
const _: () = assert!(
    limits::CALL_SLACK.min == CALL_SLACK as u64 && limits::CALL_SLACK.max == CALL_SLACK as u64
);

/// The study's budgets: the episode budget and the call slack.
fn resolve_budgets(raw: &RawManifest, sink: &mut Sink<'_>) -> Budgets {
    let b = &raw.budgets;
    let episode_budget = b
        .episode_budget
        .and_then(|n| within(sink, "budgets.episode_budget", n, &limits::EPISODE_BUDGET))
        .unwrap_or(EPISODE_BUDGET);
    if let Some(s) = b.call_slack {
        within::<u32>(sink, "budgets.call_slack", s, &limits::CALL_SLACK);
    }
    Budgets {
        episode_budget,
        call_slack: CALL_SLACK,
    }
}

/// The completion caps of a block (`at` is where its budgets were written):
/// `completion_caps` and the `configuration_caps` of its configurations.
/// The caps of a block; with `replaced` (`--model` replaced the manifest's
/// configurations), an entry of `configuration_caps` naming a configuration the block
/// no longer runs is left out rather than refused.
fn resolve_caps_of(
    sink: &mut Sink<'_>,
    at: &str,
    b: &RawBudgets,
    configurations: &[String],
    replaced: bool,
) -> (Vec<u32>, std::collections::BTreeMap<String, Vec<u32>>) {
    let caps = match &b.completion_caps {
        None => vec![COMPLETION_CAP],
        Some(list) => resolve_caps(sink, &format!("{at}.completion_caps"), list),
    };
    let mut configuration_caps = std::collections::BTreeMap::new();
    for (name, list) in b.configuration_caps.iter().flatten() {
        let path = format!("{at}.configuration_caps.{name}");
        if configurations.iter().any(|c| c == name) {
            configuration_caps.insert(name.clone(), resolve_caps(sink, &path, list));
        } else if !replaced {
            sink.unknown(
                &path,
                "selected configuration",
                name,
                configurations.iter().map(String::as_str),
                "the key must name a configuration the manifest selects",
            );
        }
    }
    (caps, configuration_caps)
}

/// A list of completion caps at `path`: each in [`limits::COMPLETION_CAP`], each once.
fn resolve_caps(sink: &mut Sink<'_>, path: &str, list: &[i64]) -> Vec<u32> {
    let mut caps = Vec::new();
    let mut seen = HashSet::new();
    if list.is_empty() {
        sink.at(
            path,
            format!("`{path}` is empty"),
            Some(format!("give at least one cap, e.g. [{COMPLETION_CAP}]")),
        );
    }
    for (i, cap) in list.iter().enumerate() {
        let at = format!("{path}.{i}");
        match within(sink, &at, *cap, &limits::COMPLETION_CAP) {
            Some(c) if !seen.insert(c) => {
                sink.at(&at, format!("completion cap {c} is listed twice"), None);
            }
            Some(c) => caps.push(c),
            None => {}
        }
    }
    caps
}

/// The value at `path` when it is within `limit`; otherwise the problem, in the words
/// the catalogue and the command line use for the same limit ([`limits`]), and `None`.
fn within<T: TryFrom<i128>>(
    sink: &mut Sink<'_>,
    path: &str,
    value: i64,
    limit: &'static limits::Limit,
) -> Option<T> {
    match limit.check(value) {
        Ok(v) => Some(v),
        Err(e) => {
            sink.at(path, e.to_string(), Some(limit.help.into()));
            None
        }
    }
}

/// [`within`] for an optional value, `default` when it is absent or refused.
fn limit_or(
    sink: &mut Sink<'_>,
    path: &str,
    value: Option<i64>,
    limit: &'static limits::Limit,
    default: u32,
) -> u32 {
    value
        .and_then(|v| within(sink, path, v, limit))
        .unwrap_or(default)
}

fn resolve_analyses(raw: &RawManifest, sink: &mut Sink<'_>) -> Vec<Analysis> {
    let mut out: Vec<Analysis> = Vec::new();
    let mut listed = HashSet::new();
    for (i, a) in raw.analyses.iter().enumerate() {
        let at = format!("analyses.{i}");
        let Some(kind) = crate::kinds::get(&a.kind) else {
            sink.unknown(
                &format!("{at}.kind"),
                "analysis kind",
                &a.kind,
                crate::kinds::all().map(|k| k.name()),
                "",
            );
            continue;
        };
        if !listed.insert(kind.name()) {
            sink.at(
                &format!("{at}.kind"),
                format!("analysis `{}` is listed twice", kind.name()),
                Some("give each analysis kind once".into()),
            );
            continue;
        }
        let before = sink.problems.len();
        // A null can only be a NaN or an infinity, already reported at its value.
        let given: serde_json::Map<String, serde_json::Value> = a
            .params
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let known = kind.kind().parameters();
        for key in given.keys().filter(|k| !known.contains(&k.as_str())) {
            let hint = if known.is_empty() {
                format!("the {} analysis takes no parameters", kind.name())
            } else {
                format!("the {} analysis takes: {}", kind.name(), known.join(", "))
            };
            sink.unknown(
                &format!("{at}.{key}"),
                &format!("parameter of the {} analysis", kind.name()),
                key,
                known.iter().copied(),
                &hint,
            );
        }
        let mut params = serde_json::Map::new();
        if sink.problems.len() == before {
            match kind.kind().parse(&given) {
                Ok(p) => params = p,
                Err(problems) => {
                    for p in problems {
                        sink.at(&format!("{at}.{}", p.path), p.message, p.help);
                    }
                }
            }
        }
        let mut inputs = std::collections::BTreeMap::new();
        for (table, input) in a.inputs.iter().flatten() {
            let path = format!("{at}.inputs.{table}");
            if !kind.table_inputs().any(|t| t == table) {
                let tables: Vec<&str> = kind.table_inputs().collect();
                sink.unknown(
                    &path,
                    &format!("input table of the {} analysis", kind.name()),
                    table,
                    tables.iter().copied(),
                    &if tables.is_empty() {
                        format!("the {} analysis reads no other table", kind.name())
                    } else {
                        format!("it reads: {}", tables.join(", "))
                    },
                );
                continue;
            }
            if !is_study_name(&input.from) {
                sink.at(
                    &format!("{path}.from"),
                    format!("`from = \"{}\"` is not a study name", input.from),
                    Some(format!("name the `[study] name` of the manifest that writes the table, an identifier: {}", names::RULE)),
                );
            } else if input.from == raw.study.name {
                sink.at(
                    &format!("{path}.from"),
                    format!("`from = \"{}\"` is this study", input.from),
                    Some(format!(
                        "drop `inputs.{table}` to read this study's own `{table}` table"
                    )),
                );
            } else {
                inputs.insert(table.clone(), input.from.clone());
            }
        }
        out.push(Analysis {
            kind,
            params,
            inputs,
        });
    }
    out
}

/// Every name an analysis takes (arms, configurations, cells, lanes, caps) resolved
/// against the design, each problem at its parameter's span: a misspelt arm found
/// after 1,368 paid episodes is a manifest error found too late.
fn check_analysis_names(
    sink: &mut Sink<'_>,
    analyses: &[Analysis],
    design: &tbb_analysis::Design,
    catalogue: &[String],
) {
    let names = tbb_analysis::Names { design, catalogue };
    for (i, a) in analyses.iter().enumerate() {
        for p in a.kind.kind().check_names(&a.params, &names) {
            sink.at(&format!("analyses.{i}.{}", p.path), p.message, p.help);
        }
    }
}

/// The catalogue path the manifest names, resolved against the manifest's directory.
pub(super) fn catalogue_path(raw: &RawManifest, manifest: &Path) -> std::path::PathBuf {
    let dir = manifest.parent().unwrap_or(Path::new(""));
    dir.join(
        raw.study
            .catalogue
            .as_deref()
            .unwrap_or("configurations.toml"),
    )
}
