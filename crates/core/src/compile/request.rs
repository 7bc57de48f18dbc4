//! Renders the user request: the intent's template with each placeholder replaced by a
//! line in a fixed phrasing.
//!
//! The phrasing is a small grammar, stable across families, so a program can parse it:
//!
//! ```text
//! Required source route: workspace "W", region "R", collection "C".
//! Start with the search query "Q".
//! Requested facts: f1, f2, f3.
//! Decision policy: answer "A" if f1 equals "x" and f2 is greater than 3; otherwise answer "B".
//! State change: if the decision is "A", call TOOL with id = the id of the current record holding f1, field = "x"; otherwise change nothing.
//! State change: none; do not create, change, send, pay or delete anything.
//! Evidence: list in "sources" the id of every current record that supplied a requested fact.
//! Answer schema: respond with raw JSON only, exactly {"decision": "A" | "B", "f1": string, ..., "sources": [record id, ...]}.
//! ```
//!
//! The rendered text depends on the family alone: it is identical across every cell.

use serde_json::Value as Json;

use crate::family::{policy, FactType, Family};

/// The rendered user request of a family.
pub fn render(family: &Family) -> String {
    let def = &family.intent.def;
    let route = &family.route;
    let mut text = def.template.get_ref().trim().to_string();
    let fact_names: Vec<&str> = def.facts.iter().map(|f| f.name.as_str()).collect();
    let replacements = [
        ("{case}", format!("{} {}", def.subject, family.case_ref)),
        (
            "{route}",
            format!(
                "Required source route: workspace {}, region {}, collection {}.",
                quote(&route.workspace.name),
                quote(&route.region.name),
                quote(&route.collection.name)
            ),
        ),
        (
            "{start}",
            format!("Start with the search query {}.", quote(&family.case_ref)),
        ),
        (
            "{facts}",
            format!("Requested facts: {}.", fact_names.join(", ")),
        ),
        ("{policy}", policy::render(&def.policy)),
        ("{state_change}", state_change_line(family)),
        (
            "{evidence}",
            "Evidence: list in \"sources\" the id of every current record that supplied a requested fact."
                .to_string(),
        ),
        ("{schema}", schema_line(family)),
    ];
    for (placeholder, line) in replacements {
        text = text.replacen(placeholder, &line, 1);
    }
    text
}

fn quote(s: &str) -> String {
    Json::String(s.to_string()).to_string()
}

fn state_change_line(family: &Family) -> String {
    let def = &family.intent.def;
    let Some(rule) = &def.state_change else {
        return "State change: none; do not create, change, send, pay or delete anything."
            .to_string();
    };
    let mut args = Vec::new();
    if let Some(stage) = rule.target_stage {
        let holder = def
            .facts
            .iter()
            .find(|f| f.stage == stage)
            .map_or("", |f| f.name.as_str());
        args.push(format!(
            "id = the id of the current record holding {holder}"
        ));
    }
    for (k, v) in &rule.args {
        let value = match v.strip_prefix("{fact:").and_then(|r| r.strip_suffix('}')) {
            Some(fact) => format!("the value of {fact}"),
            None if v == "{case_ref}" => quote(&family.case_ref),
            None => quote(v),
        };
        args.push(format!("{k} = {value}"));
    }
    format!(
        "State change: if the decision is {}, call {} with {}; otherwise change nothing.",
        quote(&rule.when),
        family.route.tool_name(&rule.tool),
        args.join(", ")
    )
}

fn schema_line(family: &Family) -> String {
    let def = &family.intent.def;
    let mut labels: Vec<String> = def.policy.rules.iter().map(|r| quote(&r.label)).collect();
    labels.push(quote(&def.policy.otherwise));
    labels.dedup();
    let mut parts = vec![format!("\"decision\": {}", labels.join(" | "))];
    for f in &def.facts {
        let ty = match f.fact_type {
            FactType::String => "string",
            FactType::Integer => "integer",
            FactType::Boolean => "boolean",
            FactType::Date => "\"YYYY-MM-DD\"",
        };
        parts.push(format!("{}: {ty}", quote(&f.name)));
    }
    parts.push("\"sources\": [record id, ...]".to_string());
    format!(
        "Answer schema: respond with raw JSON only, exactly {{{}}}.",
        parts.join(", ")
    )
}
