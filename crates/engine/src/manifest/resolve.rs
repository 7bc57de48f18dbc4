//! Stage 2: checks a [`RawManifest`] against the families and the configuration
//! catalogue and resolves it into a [`Manifest`]'s parts.
//!
//! Every check runs, whatever failed before it, and each failure becomes one
//! [`Problem`] at the span of the value at fault (or naming the override it came from),
//! with "did you mean" for misspelled names.

use std::path::Path;

use miette::NamedSource;

use super::error::Problem;
use super::layers::{Layers, Origin};
use super::raw::{RawCell, RawManifest};
use super::{Analysis, AnalysisKind, Budgets, CALL_SLACK};
use crate::harness::{Lane, PromptVariant, COMPLETION_CAP};
use tbb_core::compile::cell::{Cell, CellError, Encoding, Routing, Workflow};
use tbb_core::family::{closest, FamilySet};
use tbb_core::grade::EPISODE_BUDGET;
use tbb_provider::config::{Catalogue, ProviderKind};
use tbb_provider::Configuration;

/// Collects problems, placing each at its value's origin.
pub(super) struct Sink<'a> {
    pub layers: &'a Layers,
    pub src: NamedSource<std::sync::Arc<str>>,
    pub problems: Vec<Problem>,
}

impl Sink<'_> {
    /// A problem with the value at `path`.
    pub fn at(&mut self, path: &str, message: impl Into<String>, help: Option<String>) {
        let message = message.into();
        let (message, span) = match self.layers.origin(path) {
            Origin::File(span) => (message, Some(span.into())),
            Origin::Override(name) => (format!("{name}: {message}"), None),
            Origin::Default => (message, None),
        };
        self.problems.push(Problem {
            message,
            src: self.src.clone(),
            span,
            label: "here".into(),
            help,
        });
    }

    /// An unknown name at `path`, with "did you mean" (or the list when it is short).
    fn unknown<'o>(
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
    pub lanes: Vec<Lane>,
    pub repairs: Vec<PromptVariant>,
    pub configurations: Vec<Configuration>,
    pub budgets: Budgets,
    pub repeats: u32,
    pub analyses: Vec<Analysis>,
}

/// Resolves every section; `None` when any problem was found (they are in the sink).
pub(super) fn resolve(
    raw: &RawManifest,
    sink: &mut Sink<'_>,
    families: &FamilySet,
    catalogue: Option<&Catalogue>,
) -> Option<Resolved> {
    let before = sink.problems.len();
    check_study_name(raw, sink);
    let configurations = catalogue
        .map(|c| resolve_configurations(raw, sink, c))
        .unwrap_or_default();
    let resolved = Resolved {
        families: resolve_families(raw, sink, families),
        cells: resolve_cells(raw, sink),
        lanes: resolve_list(
            sink,
            "lanes",
            "lane",
            raw.lanes.as_deref(),
            &[("routed", Lane::Routed), ("fixed", Lane::Fixed)],
            Lane::Routed,
        ),
        repairs: resolve_list(
            sink,
            "repairs",
            "repair",
            raw.repairs.as_deref(),
            &[
                ("none", PromptVariant::Base),
                ("workflow_prompt", PromptVariant::Workflow),
                ("interface_guide", PromptVariant::InterfaceGuide),
            ],
            PromptVariant::Base,
        ),
        configurations: configurations.clone(),
        budgets: resolve_budgets(raw, sink, &configurations),
        repeats: positive(sink, "repeats", raw.repeats, 1),
        analyses: resolve_analyses(raw, sink),
    };
    (sink.problems.len() == before).then_some(resolved)
}

/// Whether `name` can name a study (and its outputs directory).
pub(crate) fn is_study_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn check_study_name(raw: &RawManifest, sink: &mut Sink<'_>) {
    let name = &raw.study.name;
    if !is_study_name(name) {
        sink.at(
            "study.name",
            format!("study name `{name}` is not a lowercase identifier"),
            Some("use lowercase letters, digits, `-` and `_` (it names outputs/<study>/)".into()),
        );
    }
}

fn resolve_families(raw: &RawManifest, sink: &mut Sink<'_>, set: &FamilySet) -> Vec<String> {
    let f = &raw.families;
    let filtered =
        f.intents.is_some() || f.domains.is_some() || f.names.is_some() || f.splits.is_some();
    match f.select.as_deref() {
        None | Some("all") => {}
        Some(other) => sink.at(
            "families.select",
            format!("unknown selection `{other}`"),
            Some("`select = \"all\"` takes every family; to choose, use intents, domains, names or splits".into()),
        ),
    }
    if f.select.is_some() && filtered {
        sink.at(
            "families.select",
            "`select = \"all\"` cannot be combined with intents, domains, names or splits",
            Some("remove `select`, or remove the filters".into()),
        );
    }
    let intents = names_in(
        sink,
        "families.intents",
        "intent",
        f.intents.as_deref(),
        set.intents.iter().map(|i| i.name()),
        "run `tbb families` to list the intents",
    );
    let domains = names_in(
        sink,
        "families.domains",
        "domain",
        f.domains.as_deref(),
        ["accounting", "email", "file", "calendar"].into_iter(),
        "",
    );
    let names = names_in(
        sink,
        "families.names",
        "family",
        f.names.as_deref(),
        set.families.iter().map(|f| f.name.as_str()),
        "run `tbb families` to list the families",
    );
    let splits = names_in(
        sink,
        "families.splits",
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
                && pass(
                    &domains,
                    &tbb_core::compile::cell::level_name(&fam.domain()),
                )
                && pass(&names, &fam.name)
                && pass(&splits, &tbb_core::compile::cell::level_name(&fam.split()))
        })
        .map(|fam| fam.name.clone())
        .collect();
    let clean = [&intents, &domains, &names, &splits]
        .iter()
        .all(|l| l.as_ref().is_none_or(|l| !l.is_empty()));
    if chosen.is_empty() && clean {
        sink.at(
            "families",
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

fn resolve_cells(raw: &RawManifest, sink: &mut Sink<'_>) -> Vec<Cell> {
    let cells = &raw.cells;
    match (&cells.preset, &cells.list) {
        (Some(_), Some(_)) => {
            sink.at(
                "cells.preset",
                "`preset` and `[[cells.list]]` cannot both be given",
                Some("remove one of them".into()),
            );
            Vec::new()
        }
        (Some(p), None) if p != "capacity" => {
            sink.unknown(
                "cells.preset",
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
                sink.at("cells.list", "the cell list is empty", None);
            }
            let mut out: Vec<Cell> = Vec::new();
            // A set, not `out.contains`: generated lists can hold thousands of cells.
            let mut seen = std::collections::BTreeSet::new();
            for (i, rc) in list.iter().enumerate() {
                if let Some(cell) = resolve_cell(sink, &format!("cells.list.{i}"), rc) {
                    if !seen.insert(cell.normalized()) {
                        sink.at(
                            &format!("cells.list.{i}"),
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

/// A list of names mapped to values, in the order given, without repeats.
fn resolve_list<T: Copy + PartialEq>(
    sink: &mut Sink<'_>,
    path: &str,
    what: &str,
    given: Option<&[String]>,
    table: &[(&str, T)],
    default: T,
) -> Vec<T> {
    let Some(given) = given else {
        return vec![default];
    };
    if given.is_empty() {
        sink.at(
            path,
            format!("`{path}` is empty"),
            Some("give at least one".into()),
        );
    }
    let mut out = Vec::new();
    for (i, name) in given.iter().enumerate() {
        let at = format!("{path}.{i}");
        match table.iter().find(|(n, _)| n == name) {
            Some((_, v)) if out.contains(v) => {
                sink.at(&at, format!("{what} `{name}` is listed twice"), None)
            }
            Some((_, v)) => out.push(*v),
            None => sink.unknown(&at, what, name, table.iter().map(|(n, _)| *n), ""),
        }
    }
    out
}

fn resolve_configurations(
    raw: &RawManifest,
    sink: &mut Sink<'_>,
    catalogue: &Catalogue,
) -> Vec<Configuration> {
    let c = &raw.configurations;
    let all = &catalogue.configurations;
    let mut chosen = vec![false; all.len()];
    let mut by = vec![String::new(); all.len()];
    if let Some(names) = &c.names {
        for (i, name) in names.iter().enumerate() {
            match all.iter().position(|x| &x.name == name) {
                Some(k) => {
                    chosen[k] = true;
                    by[k] = format!("configurations.names.{i}");
                }
                None => sink.unknown(
                    &format!("configurations.names.{i}"),
                    "configuration",
                    name,
                    all.iter().map(|x| x.name.as_str()),
                    "run `tbb configs` to list the catalogue",
                ),
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
                        by[k] = format!("configurations.organizations.{i}");
                    }
                }
            }
            if !any {
                let mut orgs: Vec<&str> = all.iter().map(|x| x.organization.as_str()).collect();
                orgs.dedup();
                sink.unknown(
                    &format!("configurations.organizations.{i}"),
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
                by[k] = "configurations.all_sim".into();
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
        out.push(x.clone());
    }
    if out.is_empty() && c.names.is_none() && c.organizations.is_none() && c.all_sim != Some(true) {
        sink.at(
            "configurations",
            "no configuration is selected",
            Some("add `[configurations]` with `names = [...]`, `organizations = [...]` or `all_sim = true`".into()),
        );
    }
    out
}

fn resolve_budgets(
    raw: &RawManifest,
    sink: &mut Sink<'_>,
    configurations: &[Configuration],
) -> Budgets {
    let b = &raw.budgets;
    let caps = match &b.completion_caps {
        None => vec![COMPLETION_CAP],
        Some(list) => resolve_caps(sink, "budgets.completion_caps", list),
    };
    let mut configuration_caps = std::collections::BTreeMap::new();
    for (name, list) in b.configuration_caps.iter().flatten() {
        let at = format!("budgets.configuration_caps.{name}");
        if configurations.iter().any(|c| &c.name == name) {
            configuration_caps.insert(name.clone(), resolve_caps(sink, &at, list));
        } else {
            sink.unknown(
                &at,
                "selected configuration",
                name,
                configurations.iter().map(|x| x.name.as_str()),
                "the key must name a configuration the manifest selects",
            );
        }
    }
    let episode_budget = match b.episode_budget {
        None => EPISODE_BUDGET,
        Some(n) if n > 0 => n as u64,
        Some(n) => {
            sink.at(
                "budgets.episode_budget",
                format!("episode budget {n} is not a positive number of tokens"),
                Some(format!("the frozen budget is {EPISODE_BUDGET}")),
            );
            EPISODE_BUDGET
        }
    };
    if let Some(s) = b.call_slack {
        if s != i64::from(CALL_SLACK) {
            sink.at(
                "budgets.call_slack",
                format!("call_slack = {s} is not supported: only {CALL_SLACK} is"),
                Some(format!(
                    "the compiler fixes every variant's call limit at its certified minimum + {CALL_SLACK}; remove the key or set it to {CALL_SLACK}"
                )),
            );
        }
    }
    Budgets {
        completion_caps: caps,
        configuration_caps,
        episode_budget,
        call_slack: CALL_SLACK,
    }
}

/// A list of completion caps at `path`: positive, each once.
fn resolve_caps(sink: &mut Sink<'_>, path: &str, list: &[i64]) -> Vec<u32> {
    let mut caps = Vec::new();
    if list.is_empty() {
        sink.at(
            path,
            format!("`{path}` is empty"),
            Some(format!("give at least one cap, e.g. [{COMPLETION_CAP}]")),
        );
    }
    for (i, cap) in list.iter().enumerate() {
        let at = format!("{path}.{i}");
        match u32::try_from(*cap) {
            Ok(c) if c > 0 && !caps.contains(&c) => caps.push(c),
            Ok(c) if c > 0 => sink.at(&at, format!("completion cap {c} is listed twice"), None),
            _ => sink.at(
                &at,
                format!("completion cap {cap} is not a positive number of tokens"),
                Some(format!("the frozen cap is {COMPLETION_CAP}")),
            ),
        }
    }
    caps
}

fn positive(sink: &mut Sink<'_>, path: &str, value: Option<i64>, default: u32) -> u32 {
    match value {
        None => default,
        Some(n) => match u32::try_from(n) {
            Ok(n) if n > 0 => n,
            _ => {
                sink.at(
                    path,
                    format!("`{path}` = {n} must be a positive integer"),
                    None,
                );
                default
            }
        },
    }
}

fn resolve_analyses(raw: &RawManifest, sink: &mut Sink<'_>) -> Vec<Analysis> {
    let mut out: Vec<Analysis> = Vec::new();
    for (i, a) in raw.analyses.iter().enumerate() {
        let at = format!("analyses.{i}");
        let Some(kind) = AnalysisKind::get(&a.kind) else {
            sink.unknown(
                &format!("{at}.kind"),
                "analysis kind",
                &a.kind,
                AnalysisKind::all().map(|k| k.name()),
                "",
            );
            continue;
        };
        if out.iter().any(|x| x.kind == kind) {
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
                    Some("name the `[study] name` of the manifest that writes the table (lowercase letters, digits, `-`, `_`)".into()),
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
