//! Reminders (upstream's `tools/reminder.py`).
//!
//! A reminder has content, a reminder time and optionally a place; its creation time is
//! the frozen clock's, and modifying it stamps the creation time again. Timestamps must
//! be seconds between 1980 and 2050, latitudes and longitudes in range.
//! `search_reminder` matches the id and the place exactly, `content` fuzzily
//! (`WRatio` ≥ 50), and bounds both timestamps.
//!
//! Never: keeps two reminders with one id.

use serde_json::Value;

use super::args::{
    check_latitude, check_longitude, check_timestamp, not_given, not_given_or_none, opt, req, Args,
    Ty,
};
use super::search::{filter, How};
use super::{new_id, rows_value, Module, Tool, ToolError};
use crate::clock::Clock;
use crate::context::{Context, Namespace, Row};
use crate::py;

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "add_reminder",
        module: Module::Reminder,
        params: &[
            req("content", Ty::Str),
            req("reminder_timestamp", Ty::Float),
            opt("latitude", Ty::Float, true),
            opt("longitude", Ty::Float, true),
        ],
        typechecked: true,
        result_keys: &[],
        run: add_reminder,
    },
    Tool {
        name: "modify_reminder",
        module: Module::Reminder,
        params: &[
            req("reminder_id", Ty::Str),
            not_given("content", Ty::Str),
            not_given("reminder_timestamp", Ty::Float),
            not_given_or_none("latitude", Ty::Float),
            not_given_or_none("longitude", Ty::Float),
        ],
        typechecked: true,
        result_keys: &[],
        run: modify_reminder,
    },
    Tool {
        name: "search_reminder",
        module: Module::Reminder,
        params: &[
            not_given("reminder_id", Ty::Str),
            not_given("content", Ty::Str),
            not_given("creation_timestamp_lowerbound", Ty::Float),
            not_given("creation_timestamp_upperbound", Ty::Float),
            not_given("reminder_timestamp_lowerbound", Ty::Float),
            not_given("reminder_timestamp_upperbound", Ty::Float),
            not_given("latitude", Ty::Float),
            not_given("longitude", Ty::Float),
        ],
        typechecked: true,
        result_keys: &[
            "reminder_id",
            "content",
            "creation_timestamp",
            "reminder_timestamp",
            "latitude",
            "longitude",
        ],
        run: search_reminder,
    },
    Tool {
        name: "remove_reminder",
        module: Module::Reminder,
        params: &[req("reminder_id", Ty::Str)],
        typechecked: true,
        result_keys: &[],
        run: remove_reminder,
    },
];

fn check_place_and_time(args: &Args) -> Result<(), ToolError> {
    check_timestamp(args, "reminder_timestamp")?;
    check_latitude(args, "latitude")?;
    check_longitude(args, "longitude")
}

fn add_reminder(ctx: &mut Context, clock: Clock, args: &Args) -> Result<Value, ToolError> {
    check_place_and_time(args)?;
    let mut row = Row::new();
    for column in ["content", "reminder_timestamp", "latitude", "longitude"] {
        row.insert(
            column.into(),
            args.get(column).cloned().unwrap_or(Value::Null),
        );
    }
    row.insert("creation_timestamp".into(), Value::from(clock.now()));
    let id = new_id(
        ctx,
        Namespace::Reminder,
        "reminder_id",
        &Value::Object(row.clone()),
    );
    row.insert("reminder_id".into(), Value::from(id.as_str()));
    ctx.add_to_database(Namespace::Reminder, vec![row])?;
    Ok(Value::from(id))
}

fn modify_reminder(ctx: &mut Context, clock: Clock, args: &Args) -> Result<Value, ToolError> {
    check_place_and_time(args)?;
    let fields = ["content", "reminder_timestamp", "latitude", "longitude"];
    if fields.iter().all(|f| args.get(f).is_none()) {
        return Err(ToolError::Value(
            "No update information given. At least one new field should be provided among \
             [content, reminder_timestamp, latitude, longitude] in order to modify reminder"
                .into(),
        ));
    }
    let id = args.text("reminder_id").unwrap_or_default();
    let matching: Vec<Row> = ctx
        .get_database(Namespace::Reminder, None, false)?
        .into_iter()
        .filter(|r| r.get("reminder_id").and_then(Value::as_str) == Some(id))
        .collect();
    let id_text = format!("reminder_id={}", py::str_repr(id));
    let mut row = match matching.as_slice() {
        [] => {
            return Err(ToolError::NoData(format!(
                "No db entry matching {id_text} found"
            )))
        }
        [one] => one.clone(),
        _ => {
            return Err(ToolError::Duplicate(format!(
                "More than 1 entry with {id_text} found"
            )))
        }
    };
    row.insert("creation_timestamp".into(), Value::from(clock.now()));
    for f in fields {
        if let Some(v) = args.get(f) {
            row.insert(f.into(), v.clone());
        }
    }
    ctx.remove_from_database(Namespace::Reminder, |r| {
        r.get("reminder_id").and_then(Value::as_str) == Some(id)
    })?;
    ctx.add_to_database(Namespace::Reminder, vec![row])?;
    Ok(Value::Null)
}

fn search_reminder(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    for bound in [
        "creation_timestamp_lowerbound",
        "creation_timestamp_upperbound",
        "reminder_timestamp_lowerbound",
        "reminder_timestamp_upperbound",
    ] {
        check_timestamp(args, bound)?;
    }
    check_latitude(args, "latitude")?;
    check_longitude(args, "longitude")?;
    let rows = ctx.get_database(Namespace::Reminder, None, false)?;
    filter(
        rows,
        &[
            ("reminder_id", How::Exact, args.get("reminder_id")),
            ("content", How::Fuzzy(50.0), args.get("content")),
            (
                "creation_timestamp",
                How::AtLeast,
                args.get("creation_timestamp_lowerbound"),
            ),
            (
                "creation_timestamp",
                How::AtMost,
                args.get("creation_timestamp_upperbound"),
            ),
            (
                "reminder_timestamp",
                How::AtLeast,
                args.get("reminder_timestamp_lowerbound"),
            ),
            (
                "reminder_timestamp",
                How::AtMost,
                args.get("reminder_timestamp_upperbound"),
            ),
            ("latitude", How::Exact, args.get("latitude")),
            ("longitude", How::Exact, args.get("longitude")),
        ],
    )
    .map(rows_value)
}

fn remove_reminder(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    let id = args.text("reminder_id").unwrap_or_default();
    ctx.remove_from_database(Namespace::Reminder, |r| {
        r.get("reminder_id").and_then(Value::as_str) == Some(id)
    })
    .map_err(|_| {
        ToolError::NoData(format!(
            "No db entry matching reminder_id={} found",
            py::str_repr(id)
        ))
    })?;
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::execute;
    use crate::tools::tests::base_world;
    use serde_json::json;

    fn run(ctx: &mut Context, name: &str, args: Value) -> Result<Value, ToolError> {
        execute(ctx, Clock::EXPORT, name, &args)
    }

    const DRESS: &str = "54f20be9-eac3-5e76-8e57-724e48d3d477";

    #[test]
    fn add_stores_floats_and_the_creation_time() {
        let mut w = base_world();
        let id = run(
            &mut w,
            "add_reminder",
            json!({"content": "Buy chocolate milk", "reminder_timestamp": 1796576400}),
        )
        .unwrap();
        let all = w.get_database(Namespace::Reminder, None, false).unwrap();
        assert_eq!(
            Value::Object(all[3].clone()),
            json!({"reminder_id": id, "content": "Buy chocolate milk", "creation_timestamp": 1796455147.0,
                   "reminder_timestamp": 1796576400.0, "latitude": null, "longitude": null})
        );
        assert!(all[3]["reminder_timestamp"].is_f64());
        assert_eq!(
            run(&mut w, "add_reminder", json!({"content": "x", "reminder_timestamp": 1796576400000i64}))
                .unwrap_err()
                .to_string(),
            "ValueError: Parameter 'reminder_timestamp' is larger than its valid range maximum of 2524604400.0."
        );
        assert_eq!(
            run(
                &mut w,
                "add_reminder",
                json!({"content": "x", "reminder_timestamp": 1796576400, "latitude": 91})
            )
            .unwrap_err()
            .to_string(),
            "ValueError: Parameter 'latitude' is larger than its valid range maximum of 90.0."
        );
    }

    #[test]
    fn modify_restamps_and_may_clear_the_place() {
        let mut w = base_world();
        run(
            &mut w,
            "modify_reminder",
            json!({"reminder_id": DRESS, "reminder_timestamp": 1796576400.0, "latitude": null}),
        )
        .unwrap();
        let all = w.get_database(Namespace::Reminder, None, false).unwrap();
        let last = &all[2];
        assert_eq!(last["reminder_id"], DRESS);
        assert_eq!(last["creation_timestamp"], 1796455147.0);
        assert_eq!(last["reminder_timestamp"], 1796576400.0);
        assert_eq!(last["latitude"], Value::Null);
        assert_eq!(last["longitude"], -122.03961770355414);
        assert!(matches!(
            run(&mut w, "modify_reminder", json!({"reminder_id": DRESS})),
            Err(ToolError::Value(_))
        ));
        assert_eq!(
            run(
                &mut w,
                "modify_reminder",
                json!({"reminder_id": "x", "content": "y"})
            )
            .unwrap_err()
            .to_string(),
            "polars.exceptions.NoDataError: No db entry matching reminder_id='x' found"
        );
    }

    #[test]
    fn search_and_remove() {
        let mut w = base_world();
        let upcoming = run(
            &mut w,
            "search_reminder",
            json!({"reminder_timestamp_lowerbound": 1796455147.0}),
        )
        .unwrap();
        assert_eq!(upcoming.as_array().unwrap().len(), 1);
        assert_eq!(upcoming[0]["reminder_id"], DRESS);
        let tickets = run(&mut w, "search_reminder", json!({"content": "tickets"})).unwrap();
        assert_eq!(tickets.as_array().unwrap().len(), 2);
        let here = run(
            &mut w,
            "search_reminder",
            json!({"latitude": 37.3237926356735}),
        )
        .unwrap();
        assert_eq!(here[0]["reminder_id"], DRESS);
        run(&mut w, "remove_reminder", json!({"reminder_id": DRESS})).unwrap();
        assert_eq!(
            w.get_database(Namespace::Reminder, None, false)
                .unwrap()
                .len(),
            2
        );
        assert!(matches!(
            run(&mut w, "remove_reminder", json!({"reminder_id": DRESS})),
            Err(ToolError::NoData(_))
        ));
    }
}
