//! The device settings (upstream's `tools/setting.py`): cellular, wifi, location
//! service, low battery mode, and the current location.
//!
//! The settings are one row of `SETTING`. Turning a setting to the state it is already
//! in is refused (`ValueError: wifi already enabled`). Low battery mode forbids turning
//! cellular, wifi or location service on (`PermissionError`), and turning it on turns
//! the three off. The current location is readable only with location service on.
//!
//! Never: changes a setting the call did not name (low battery mode's three excepted).

use serde_json::Value;

use super::args::{req, truthy, Args, Param, Ty};
use super::{Module, Tool, ToolError};
use crate::clock::Clock;
use crate::context::{Context, Namespace};

const ON: &[Param] = &[req("on", Ty::Bool)];

pub(crate) const TOOLS: &[Tool] = &[
    tool(
        "set_low_battery_mode_status",
        ON,
        set_low_battery_mode_status,
    ),
    tool("get_low_battery_mode_status", &[], |c, _, _| {
        get(c, "low_battery_mode").map(Value::Bool)
    }),
    tool(
        "set_location_service_status",
        ON,
        set_location_service_status,
    ),
    tool("get_location_service_status", &[], |c, _, _| {
        get(c, "location_service").map(Value::Bool)
    }),
    tool(
        "set_cellular_service_status",
        ON,
        set_cellular_service_status,
    ),
    tool("get_cellular_service_status", &[], |c, _, _| {
        get(c, "cellular").map(Value::Bool)
    }),
    tool("set_wifi_status", ON, set_wifi_status),
    tool("get_wifi_status", &[], |c, _, _| {
        get(c, "wifi").map(Value::Bool)
    }),
    Tool {
        name: "get_current_location",
        module: Module::Setting,
        params: &[],
        typechecked: false,
        result_keys: &["latitude", "longitude"],
        run: get_current_location,
    },
];

const fn tool(
    name: &'static str,
    params: &'static [Param],
    run: fn(&mut Context, Clock, &Args) -> Result<Value, ToolError>,
) -> Tool {
    Tool {
        name,
        module: Module::Setting,
        params,
        typechecked: false,
        result_keys: &[],
        run,
    }
}

/// The single settings row of the current snapshot.
fn settings(ctx: &Context) -> Result<crate::context::Row, ToolError> {
    let rows = ctx.get_database(Namespace::Setting, None, false)?;
    rows.into_iter()
        .next()
        .ok_or_else(|| ToolError::Value("the settings database is empty".into()))
}

/// upstream's `get_boolean_settings`.
pub(crate) fn get(ctx: &Context, setting: &str) -> Result<bool, ToolError> {
    // A null cell reads as False, as polars' falsy null does in upstream's checks.
    Ok(settings(ctx)?
        .get(setting)
        .and_then(Value::as_bool)
        .unwrap_or(false))
}

/// upstream's `set_boolean_settings`: refuses a setting already in that state.
fn set(ctx: &mut Context, setting: &str, on: bool) -> Result<(), ToolError> {
    let mut row = settings(ctx)?;
    if row.get(setting).and_then(Value::as_bool).unwrap_or(false) == on {
        let state = if on { "enabled" } else { "disabled" };
        return Err(ToolError::Value(format!("{setting} already {state}")));
    }
    row.insert(setting.into(), Value::Bool(on));
    ctx.update_database(Namespace::Setting, vec![row])?;
    Ok(())
}

fn on(args: &Args) -> Result<bool, ToolError> {
    let v = args.get("on").unwrap_or(&Value::Null);
    ON[0].check(v)?;
    Ok(v.as_bool().unwrap_or(false))
}

fn set_low_battery_mode_status(
    ctx: &mut Context,
    _: Clock,
    args: &Args,
) -> Result<Value, ToolError> {
    let on = on(args)?;
    set(ctx, "low_battery_mode", on)?;
    if on {
        for dependent in ["cellular", "wifi", "location_service"] {
            match set(ctx, dependent, false) {
                Ok(()) | Err(ToolError::Value(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(Value::Null)
}

/// Cellular, wifi and location service: refused on while in low battery mode.
fn set_service(
    ctx: &mut Context,
    args: &Args,
    setting: &str,
    refusal: &str,
    check_type_first: bool,
) -> Result<Value, ToolError> {
    if check_type_first {
        on(args)?;
    }
    let wants_on = args.get("on").is_some_and(truthy);
    if wants_on && get(ctx, "low_battery_mode")? {
        return Err(ToolError::Permission(refusal.into()));
    }
    let on = on(args)?;
    set(ctx, setting, on)?;
    Ok(Value::Null)
}

fn set_location_service_status(
    ctx: &mut Context,
    _: Clock,
    args: &Args,
) -> Result<Value, ToolError> {
    // Upstream checks the battery before the argument's type here (and only here).
    set_service(
        ctx,
        args,
        "location_service",
        "Location service cannot be turned on in low battery mode",
        false,
    )
}

fn set_cellular_service_status(
    ctx: &mut Context,
    _: Clock,
    args: &Args,
) -> Result<Value, ToolError> {
    set_service(
        ctx,
        args,
        "cellular",
        "Cellular service cannot be turned on in low battery mode",
        true,
    )
}

fn set_wifi_status(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    set_service(
        ctx,
        args,
        "wifi",
        "Wifi cannot be turned on in low battery mode",
        true,
    )
}

fn get_current_location(ctx: &mut Context, _: Clock, _: &Args) -> Result<Value, ToolError> {
    if !get(ctx, "location_service")? {
        return Err(ToolError::Permission(
            "Location service is not enabled.".into(),
        ));
    }
    let row = settings(ctx)?;
    let mut out = serde_json::Map::new();
    for key in ["latitude", "longitude"] {
        out.insert(key.into(), row.get(key).cloned().unwrap_or(Value::Null));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::execute;
    use crate::tools::tests::{base_world, setting_of};
    use serde_json::json;

    fn run(ctx: &mut Context, name: &str, args: Value) -> Result<Value, ToolError> {
        execute(ctx, Clock::EXPORT, name, &args)
    }

    #[test]
    fn getters_read_the_settings_row() {
        let mut w = base_world();
        for (tool, value) in [
            ("get_cellular_service_status", true),
            ("get_wifi_status", true),
            ("get_location_service_status", true),
            ("get_low_battery_mode_status", false),
        ] {
            assert_eq!(run(&mut w, tool, json!({})), Ok(Value::Bool(value)));
        }
        assert_eq!(
            run(&mut w, "get_current_location", json!({})),
            Ok(json!({"latitude": 37.334606, "longitude": -122.009102}))
        );
    }

    #[test]
    fn turning_off_and_refusing_the_same_state() {
        let mut w = base_world();
        let before = w.max_sandbox_message_index();
        assert_eq!(
            run(&mut w, "set_wifi_status", json!({"on": false})),
            Ok(Value::Null)
        );
        assert!(!setting_of(&w, "wifi"));
        // The change is a new snapshot at the next message; the old one is kept.
        let old = w
            .get_database(Namespace::Setting, Some(before), false)
            .unwrap();
        assert_eq!(old[0]["wifi"], true);
        assert_eq!(
            run(&mut w, "set_wifi_status", json!({"on": false}))
                .unwrap_err()
                .to_string(),
            "ValueError: wifi already disabled"
        );
        assert_eq!(
            run(&mut w, "set_wifi_status", json!({"on": 1}))
                .unwrap_err()
                .to_string(),
            "TypeError: Parameter 'on' is of type '<class 'int'>', but expected '<class 'bool'>'."
        );
    }

    #[test]
    fn low_battery_mode_turns_services_off_and_forbids_them() {
        let mut w = base_world();
        run(&mut w, "set_cellular_service_status", json!({"on": false})).unwrap();
        run(&mut w, "set_low_battery_mode_status", json!({"on": true})).unwrap();
        for s in ["cellular", "wifi", "location_service"] {
            assert!(!setting_of(&w, s), "{s}");
        }
        assert!(setting_of(&w, "low_battery_mode"));
        for (tool, text) in [
            (
                "set_cellular_service_status",
                "PermissionError: Cellular service cannot be turned on in low battery mode",
            ),
            (
                "set_wifi_status",
                "PermissionError: Wifi cannot be turned on in low battery mode",
            ),
            (
                "set_location_service_status",
                "PermissionError: Location service cannot be turned on in low battery mode",
            ),
        ] {
            assert_eq!(
                run(&mut w, tool, json!({"on": true}))
                    .unwrap_err()
                    .to_string(),
                text
            );
        }
        // Location service checks the battery before the type of `on`.
        assert!(matches!(
            run(&mut w, "set_location_service_status", json!({"on": "yes"})),
            Err(ToolError::Permission(_))
        ));
        assert!(matches!(
            run(&mut w, "set_wifi_status", json!({"on": "yes"})),
            Err(ToolError::Type(_))
        ));
        run(&mut w, "set_low_battery_mode_status", json!({"on": false})).unwrap();
        run(&mut w, "set_location_service_status", json!({"on": true})).unwrap();
        assert!(setting_of(&w, "location_service"));
    }

    #[test]
    fn the_location_needs_location_service() {
        let mut w = base_world();
        run(&mut w, "set_location_service_status", json!({"on": false})).unwrap();
        assert_eq!(
            run(&mut w, "get_current_location", json!({}))
                .unwrap_err()
                .to_string(),
            "PermissionError: Location service is not enabled."
        );
    }
}
