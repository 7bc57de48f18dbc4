//! Text messages (upstream's `tools/messaging.py`).
//!
//! Sending needs cellular service and exactly one self contact; the recipient's
//! `person_id` is that of the first contact with the number, or null. The message is
//! stamped with the frozen clock. `search_messages` matches ids and numbers exactly,
//! `content` fuzzily (`WRatio` ≥ 50), and bounds `creation_timestamp`.
//!
//! Never: sends without cellular service.

use serde_json::Value;

use super::args::{check_phone, check_timestamp, not_given, req, Args, Ty};
use super::contact::search_by;
use super::search::{filter, How};
use super::setting;
use super::{new_id, rows_value, Module, Tool, ToolError};
use crate::clock::Clock;
use crate::context::{Context, Namespace, Row};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "send_message_with_phone_number",
        module: Module::Messaging,
        params: &[req("phone_number", Ty::Str), req("content", Ty::Str)],
        typechecked: true,
        result_keys: &[],
        run: send_message_with_phone_number,
    },
    Tool {
        name: "search_messages",
        module: Module::Messaging,
        params: &[
            not_given("message_id", Ty::Str),
            not_given("sender_person_id", Ty::Str),
            not_given("sender_phone_number", Ty::Str),
            not_given("recipient_person_id", Ty::Str),
            not_given("recipient_phone_number", Ty::Str),
            not_given("content", Ty::Str),
            not_given("creation_timestamp_lowerbound", Ty::Float),
            not_given("creation_timestamp_upperbound", Ty::Float),
        ],
        typechecked: true,
        result_keys: &[
            "message_id",
            "sender_person_id",
            "sender_phone_number",
            "recipient_person_id",
            "recipient_phone_number",
            "content",
            "creation_timestamp",
        ],
        run: search_messages,
    },
];

fn send_message_with_phone_number(
    ctx: &mut Context,
    clock: Clock,
    args: &Args,
) -> Result<Value, ToolError> {
    check_phone(args, "phone_number")?;
    if !setting::get(ctx, "cellular")? {
        return Err(ToolError::Connection(
            "Cellular service is not enabled".into(),
        ));
    }
    let phone = args.get("phone_number").cloned().unwrap_or(Value::Null);
    let selves = search_by(ctx, "is_self", Value::Bool(true))?;
    let me = match selves.as_slice() {
        [me] => me.clone(),
        _ => {
            return Err(ToolError::Duplicate(format!(
                "1 and only 1 self entry should exist in contacts database, instead found {}",
                selves.len()
            )))
        }
    };
    let recipient = search_by(ctx, "phone_number", phone.clone())?
        .first()
        .and_then(|r| r.get("person_id").cloned())
        .unwrap_or(Value::Null);
    let mut row = Row::new();
    row.insert(
        "sender_person_id".into(),
        me.get("person_id").cloned().unwrap_or(Value::Null),
    );
    row.insert(
        "sender_phone_number".into(),
        me.get("phone_number").cloned().unwrap_or(Value::Null),
    );
    row.insert("recipient_person_id".into(), recipient);
    row.insert("recipient_phone_number".into(), phone);
    row.insert(
        "content".into(),
        args.get("content").cloned().unwrap_or(Value::Null),
    );
    row.insert("creation_timestamp".into(), Value::from(clock.now()));
    let id = new_id(
        ctx,
        Namespace::Messaging,
        "message_id",
        &Value::Object(row.clone()),
    );
    row.insert("message_id".into(), Value::from(id.as_str()));
    ctx.add_to_database(Namespace::Messaging, vec![row])?;
    Ok(Value::from(id))
}

fn search_messages(ctx: &mut Context, _: Clock, args: &Args) -> Result<Value, ToolError> {
    check_phone(args, "sender_phone_number")?;
    check_phone(args, "recipient_phone_number")?;
    check_timestamp(args, "creation_timestamp_lowerbound")?;
    check_timestamp(args, "creation_timestamp_upperbound")?;
    let rows = ctx.get_database(Namespace::Messaging, None, false)?;
    filter(
        rows,
        &[
            ("message_id", How::Exact, args.get("message_id")),
            ("sender_person_id", How::Exact, args.get("sender_person_id")),
            (
                "sender_phone_number",
                How::Exact,
                args.get("sender_phone_number"),
            ),
            (
                "recipient_person_id",
                How::Exact,
                args.get("recipient_person_id"),
            ),
            (
                "recipient_phone_number",
                How::Exact,
                args.get("recipient_phone_number"),
            ),
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
        ],
    )
    .map(rows_value)
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

    const TOMAS: &str = "3815cac9-3cab-5d75-89e2-fe12fe19779e";
    const FREDRIK: &str = "9e137f06-916a-5310-8174-cf0b7e9f7054";

    #[test]
    fn send_stores_the_message_with_the_frozen_time() {
        let mut w = base_world();
        let id = run(
            &mut w,
            "send_message_with_phone_number",
            json!({"phone_number": "+12453344098", "content": "How's the new album coming along?"}),
        )
        .unwrap();
        let all = w.get_database(Namespace::Messaging, None, false).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(
            Value::Object(all[5].clone()),
            json!({"message_id": id, "sender_person_id": TOMAS, "sender_phone_number": "+11233344455",
                   "recipient_person_id": FREDRIK, "recipient_phone_number": "+12453344098",
                   "content": "How's the new album coming along?", "creation_timestamp": 1796455147.0})
        );
        // An unknown number has no recipient id.
        run(
            &mut w,
            "send_message_with_phone_number",
            json!({"phone_number": "+18005551234", "content": "hi"}),
        )
        .unwrap();
        let all = w.get_database(Namespace::Messaging, None, false).unwrap();
        assert_eq!(all[6]["recipient_person_id"], Value::Null);
    }

    #[test]
    fn send_needs_cellular_service_and_one_self() {
        let mut w = base_world();
        run(&mut w, "set_cellular_service_status", json!({"on": false})).unwrap();
        let send = json!({"phone_number": "+12453344098", "content": "hi"});
        assert_eq!(
            run(&mut w, "send_message_with_phone_number", send.clone())
                .unwrap_err()
                .to_string(),
            "ConnectionError: Cellular service is not enabled"
        );
        let mut w = base_world();
        run(&mut w, "remove_contact", json!({"person_id": TOMAS})).unwrap();
        assert_eq!(
            run(&mut w, "send_message_with_phone_number", send)
                .unwrap_err()
                .to_string(),
            "polars.exceptions.DuplicateError: 1 and only 1 self entry should exist in contacts database, instead found 0"
        );
    }

    #[test]
    fn search_by_sender_content_and_time() {
        let mut w = base_world();
        let from_homer = run(
            &mut w,
            "search_messages",
            json!({"sender_phone_number": "+10000000000"}),
        )
        .unwrap();
        let contents: Vec<&str> = from_homer
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        assert_eq!(contents, ["How's it going", "Good, keep me posted"]);
        let gpu = run(&mut w, "search_messages", json!({"content": "GPU"})).unwrap();
        assert_eq!(gpu[0]["content"], "Hey kid, you want some GPU?");
        let recent = run(
            &mut w,
            "search_messages",
            json!({"creation_timestamp_lowerbound": 1796455147.0 - 3600.0}),
        )
        .unwrap();
        assert_eq!(recent.as_array().unwrap().len(), 1);
        assert_eq!(
            run(&mut w, "search_messages", json!({"creation_timestamp_lowerbound": 1796455147000.0}))
                .unwrap_err()
                .to_string(),
            "ValueError: Parameter 'creation_timestamp_lowerbound' is larger than its valid range maximum of 2524604400.0."
        );
    }
}
