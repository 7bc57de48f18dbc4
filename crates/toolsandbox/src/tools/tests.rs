//! Shared fixtures and the registry's tests.

use std::sync::OnceLock;

use serde_json::Value;

use super::*;
use crate::scenario::Scenarios;

pub(crate) fn scenarios() -> &'static Scenarios {
    static S: OnceLock<Scenarios> = OnceLock::new();
    S.get_or_init(|| Scenarios::builtin().unwrap())
}

/// The world every scenario starts from (`cellular_off`'s, before its task).
pub(crate) fn base_world() -> Context {
    scenarios()
        .get("cellular_off")
        .unwrap()
        .starting_context
        .clone()
}

pub(crate) fn setting_of(ctx: &Context, column: &str) -> bool {
    ctx.get_database(Namespace::Setting, None, false).unwrap()[0][column]
        .as_bool()
        .unwrap()
}

#[test]
fn twenty_nine_offline_tools_and_five_online_ones() {
    let offline = offline_tools();
    assert_eq!(offline.len(), 29);
    let registry = Registry::builtin().unwrap();
    assert_eq!(registry.names().len(), 34);
    for (name, _) in &offline {
        assert!(registry.schema(name).is_some(), "{name}");
        assert!(!RAPID_API_TOOLS.contains(name));
    }
    for name in RAPID_API_TOOLS {
        assert!(registry.schema(name).is_some(), "{name}");
        assert_eq!(
            execute(&mut base_world(), Clock::EXPORT, name, &Value::Null),
            Err(ToolError::NeedsInternet { tool: name.into() })
        );
    }
    assert_eq!(
        execute(&mut base_world(), Clock::EXPORT, "rm_rf", &Value::Null)
            .unwrap_err()
            .to_string(),
        "NameError: name 'rm_rf' is not defined"
    );
}

/// Our signatures agree with the schemas upstream shows the agent: the same
/// parameters, the same required ones, and compatible JSON types.
#[test]
fn signatures_match_the_schemas() {
    let registry = Registry::builtin().unwrap();
    for (name, _) in offline_tools() {
        let tool = find(name).unwrap();
        let schema = &registry.schema(name).unwrap()["function"]["parameters"];
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let ours: Vec<&str> = tool.params.iter().map(|p| p.name).collect();
        let theirs: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut sorted = ours.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, theirs, "{name}");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let ours_required: Vec<&str> = tool
            .params
            .iter()
            .filter(|p| p.default == args::Dflt::Required)
            .map(|p| p.name)
            .collect();
        assert_eq!(ours_required, required, "{name}");
        for p in tool.params {
            let ty = props[p.name]["type"].as_str().unwrap_or_default();
            let expected = match p.ty {
                args::Ty::Str => "string",
                args::Ty::Float => "number",
                args::Ty::Int => "integer",
                args::Ty::Bool => "boolean",
            };
            assert_eq!(ty, expected, "{name}.{}", p.name);
        }
    }
}

#[test]
fn schemas_for_an_allow_list_keep_its_order() {
    let registry = Registry::builtin().unwrap();
    let s = scenarios().get("cellular_off").unwrap();
    let names: Vec<&str> = registry
        .schemas_for(&s.tool_allow_list)
        .map(|v| v["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["set_cellular_service_status", "end_conversation"]);
}
