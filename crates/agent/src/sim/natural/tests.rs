//! The natural-language path end to end: the agent driven through conversations whose
//! tool results the test plays (a small world of settings, contacts and a frozen clock),
//! with tool schemas in ToolSandbox's shapes, at neutral confusion parameters.

use std::sync::Arc;

use serde_json::{json, Value as Json};

use super::choose;
use super::plan::dependency;
use crate::chat::Sampling;
use crate::sim::{Params, SimAgent};
use crate::{ChatRequest, Message, ToolCall, ToolSchema};

fn tool(name: &str, description: &str, params: Json, required: &[&str]) -> ToolSchema {
    ToolSchema {
        name: name.into(),
        description: description.into(),
        parameters: Arc::new(json!({"type": "object", "properties": params, "required": required})),
    }
}

fn num(d: &str) -> Json {
    json!({"type": "number", "description": d})
}
fn int(d: &str) -> Json {
    json!({"type": "integer", "description": d})
}
fn text(d: &str) -> Json {
    json!({"type": "string", "description": d})
}
fn flag(d: &str) -> Json {
    json!({"type": "boolean", "description": d})
}

/// The tools of the examples, in ToolSandbox's shapes.
pub fn menu() -> Vec<ToolSchema> {
    vec![
        tool("search_contacts", "Search for a contact person based on provided arguments", json!({
            "person_id": text("String format unique identifier for the contact person, will be exact matched"),
            "name": text("Name of contact person, will be fuzzy matched"),
            "phone_number": text("Phone number of contact person, will be exact matched"),
            "relationship": text("Relationship between user and this contact, will be fuzzy matched"),
            "is_self": flag("If the requested contact corresponds to the current user. Will be exact matched")}), &[]),
        tool("send_message_with_phone_number", "Send a message to a recipient using phone_number", json!({
            "phone_number": text("String format phone number to send the message to"),
            "content": text("Message payload text")}), &["phone_number", "content"]),
        tool("search_messages", "Search for a message based on provided arguments", json!({
            "sender_phone_number": text("Phone number for the sender, will be exact matched"),
            "content": text("Message content, will be fuzzy matched")}), &[]),
        tool("add_reminder", "Add a reminder", json!({
            "content": text("Content of the reminder"),
            "reminder_timestamp": num("When the user wants to be reminded. Expressed in POSIX timestamp"),
            "latitude": num("Optional. Latitude of the location associated with this reminder"),
            "longitude": num("Optional. Longitude of the location associated with this reminder")}),
            &["content", "reminder_timestamp"]),
        tool("get_current_timestamp", "Get current POSIX timestamp", json!({}), &[]),
        tool("datetime_info_to_timestamp", "Convert  date time information to POSIX timestamp", json!({
            "year": int("Year of timestamp"), "month": int("Month of timestamp"), "day": int("Day of timestamp"),
            "hour": int("Hour of timestamp in 24hr format"), "minute": int("Minute of timestamp"),
            "second": int("Second of timestamp")}), &["year", "month", "day", "hour", "minute", "second"]),
        tool("timestamp_to_datetime_info", "Convert POSIX timestamp to a dictionary of date time information, including\n    [\"year\", \"month\", \"day\", \"hour\", \"minute\", \"second\", \"isoweekday\"]", json!({
            "timestamp": num("Float representing POSIX timestamp")}), &["timestamp"]),
        tool("shift_timestamp", "Shifts a POSIX timestamp by provided deltas. Delta can be positive or negative.", json!({
            "timestamp": num("POSIX timestamp to be shifted"), "weeks": int("Number of weeks to add or subtract"),
            "days": int("Number of days to add or subtract"), "hours": int("Number of hours to add or subtract"),
            "minutes": int("Number of minutes to add or subtract")}), &["timestamp"]),
        tool("search_holiday", "Search for a holiday by name in the US. Canonicalize return value into corresponding POSIX timestamp.", json!({
            "holiday_name": text("Name of the holiday in surface form string"),
            "year": int("Optional. Year to search the holiday in. When not provided defaults to current year.")}), &["holiday_name"]),
        tool("timestamp_diff", "Calculates the difference between two timestamps, timestamp_1 - timestamp_0, return the difference\nrepresented in days and seconds", json!({
            "timestamp_0": num("Timestamp to subtract"), "timestamp_1": num("Timestamp to subtract from")}),
            &["timestamp_0", "timestamp_1"]),
        tool("get_cellular_service_status", "Request cellular service status", json!({}), &[]),
        tool("set_cellular_service_status", "Enable / Disable cellular service", json!({
            "on": flag("If we want to turn on cellular service")}), &["on"]),
        tool("set_low_battery_mode_status", "Enable / Disable low battery mode", json!({
            "on": flag("If we want to turn on low battery mode")}), &["on"]),
        tool("set_wifi_status", "Enable / Disable wifi", json!({"on": flag("If we want to turn on wifi")}), &["on"]),
    ]
}

/// Tools unrelated to the examples (ToolSandbox's distraction tools are of this kind).
fn distractions() -> Vec<ToolSchema> {
    vec![
        tool("search_stock", "Search for various information about a stock given a query.", json!({"query": text("a company name (Apple), stock symbol (AAPL)")}), &["query"]),
        tool("convert_currency", "Converts currency amount from a one currency to another given on their ISO 4217 currency code", json!({
            "amount": num("Amount of currency to convert"), "from_currency_code": text("ISO 4217 currency code"),
            "to_currency_code": text("ISO 4217 currency code")}), &["amount", "from_currency_code", "to_currency_code"]),
        tool("unit_conversion", "Convert a certain amount from one unit to another", json!({
            "amount": num("Float point amount in from_unit"), "from_unit": text("Unit to convert from. For example celsius"),
            "to_unit": text("Unit to convert to. For example fahrenheit")}), &["amount", "from_unit", "to_unit"]),
        tool("calculate_lat_lon_distance", "Calculate the distance between 2 pairs of latitude and longitude.", json!({
            "latitude_0": num("First Latitude."), "longitude_0": num("First Longitude."),
            "latitude_1": num("Second Latitude."), "longitude_1": num("Second Longitude.")}),
            &["latitude_0", "longitude_0", "latitude_1", "longitude_1"]),
        tool("search_lat_lon", "Search for the address corresponding to a latitude and longitude", json!({
            "latitude": num("Latitude to search"), "longitude": num("Longitude to search")}), &["latitude", "longitude"]),
        tool("get_location_service_status", "Request location service status", json!({}), &[]),
        tool("seconds_to_hours_minutes_seconds", "Convert total number of seconds past 0:00 into hours, minutes and seconds", json!({
            "seconds": num("Number of seconds past 0:00")}), &["seconds"]),
        tool("get_wifi_status", "Request wifi status", json!({}), &[]),
        tool("search_weather_around_lat_lon", "Search for weather information around a latitude and longitude", json!({
            "days": int("Number of days to search for past the current time."), "latitude": num("Latitude"), "longitude": num("Longitude")}), &[]),
        tool("remove_contact", "Remove an existing contact person to contact database.", json!({
            "person_id": text("String format unique identifier of the person to be deleted")}), &["person_id"]),
    ]
}

const SYSTEM: &str = "Don't make assumptions about what values to plug into functions. Ask for clarification if a user request is ambiguous.";
const BART: &str = "[{'person_id': '9e137f06-916a-5310-8174-cf0b7e9f7054', 'name': 'Bart', 'phone_number': '+12453344098', 'relationship': 'friend', 'is_self': False}]";
const NOW: f64 = 1_796_455_147.0;

fn request(messages: &[Message], tools: &[ToolSchema]) -> ChatRequest {
    let mut all = vec![Message::System {
        content: SYSTEM.into(),
    }];
    all.extend_from_slice(messages);
    ChatRequest {
        model: "natural-test".into(),
        messages: all,
        tools: tools.to_vec(),
        max_completion_tokens: 4096,
        sampling: Sampling {
            temperature: Some(0.0),
            seed: Some(7),
            parallel_tool_calls: Some(false),
        },
    }
}

/// A small world the test plays: settings, one contact, a frozen clock.
#[derive(Debug, Clone, Copy)]
struct World {
    cellular: bool,
    low_battery: bool,
}

impl World {
    fn run(&mut self, name: &str, args: &Json) -> String {
        let on = args["on"].as_bool().unwrap_or(false);
        match name {
            "set_low_battery_mode_status" => {
                self.low_battery = on;
                if on {
                    self.cellular = false;
                }
                "None".into()
            }
            "set_cellular_service_status" if on && self.low_battery => {
                "PermissionError: Cellular service cannot be turned on in low battery mode".into()
            }
            "set_cellular_service_status" => {
                self.cellular = on;
                "None".into()
            }
            "set_wifi_status" => "None".into(),
            "send_message_with_phone_number" if !self.cellular => {
                "PermissionError: Cellular service is not enabled.".into()
            }
            "send_message_with_phone_number" => "'d6c7e5a1-0000-8000-8000-000000000001'".into(),
            "search_contacts" if args["name"] == json!("Bart") => BART.into(),
            "search_contacts" => "[]".into(),
            "get_current_timestamp" => format!("{NOW:?}"),
            "timestamp_to_datetime_info" => "{'year': 2026, 'month': 12, 'day': 5, 'hour': 7, 'minute': 19, 'second': 7, 'isoweekday': 6}".into(),
            "datetime_info_to_timestamp" => "1796576400.0".into(),
            "search_holiday" => "1798156800.0".into(),
            "timestamp_diff" => "{'days': 19, 'seconds': 60053}".into(),
            "add_reminder" => "'0b7c42d7-0000-8000-8000-000000000002'".into(),
            other => format!("NameError: name '{other}' is not defined"),
        }
    }
}

/// Plays a conversation: the user's messages one after another (the next one after each
/// reply), the world answering calls. Returns the calls made and the replies.
fn play(
    agent: &SimAgent,
    tools: &[ToolSchema],
    users: &[&str],
    mut world: World,
) -> (Vec<(String, Json)>, Vec<String>) {
    let mut messages = vec![Message::User {
        content: users[0].into(),
    }];
    let (mut calls, mut replies) = (Vec::new(), Vec::new());
    let mut next_user = 1;
    for _ in 0..20 {
        let r = agent.respond(&request(&messages, tools));
        if r.tool_calls.is_empty() {
            let text = r.text.unwrap_or_default();
            replies.push(text.clone());
            messages.push(Message::Assistant {
                content: Some(text),
                tool_calls: Vec::new(),
            });
            match users.get(next_user) {
                Some(u) => {
                    messages.push(Message::User {
                        content: (*u).into(),
                    });
                    next_user += 1;
                }
                None => break,
            }
            continue;
        }
        let call: ToolCall = r.tool_calls[0].clone();
        let args: Json = serde_json::from_str(&call.arguments).unwrap_or(Json::Null);
        calls.push((call.name.clone(), args.clone()));
        let content = world.run(&call.name, &args);
        messages.push(Message::Assistant {
            content: r.text,
            tool_calls: vec![call.clone()],
        });
        messages.push(Message::Tool {
            call_id: call.id,
            name: call.name,
            content,
        });
    }
    (calls, replies)
}

fn careful() -> SimAgent {
    SimAgent::with_params("sim-test-natural", Params::default())
}

fn names(calls: &[(String, Json)]) -> Vec<&str> {
    calls.iter().map(|(n, _)| n.as_str()).collect()
}

const ON: World = World {
    cellular: true,
    low_battery: false,
};

#[test]
fn a_setting_is_switched_and_the_reply_says_so() {
    let (calls, replies) = play(&careful(), &menu(), &["Turn off cellular service"], ON);
    assert_eq!(
        calls,
        [(
            "set_cellular_service_status".to_string(),
            json!({"on": false})
        )]
    );
    assert_eq!(replies, ["Cellular service is turned off."]);
}

#[test]
fn a_message_goes_to_the_number_a_contact_search_returns() {
    let (calls, replies) = play(
        &careful(),
        &menu(),
        &["Send a message to Bart saying: Hey what's up"],
        ON,
    );
    assert_eq!(
        names(&calls),
        ["search_contacts", "send_message_with_phone_number"]
    );
    assert_eq!(calls[0].1, json!({"name": "Bart"}));
    assert_eq!(
        calls[1].1,
        json!({"phone_number": "+12453344098", "content": "Hey what's up"})
    );
    assert_eq!(replies.len(), 1);
    assert!(replies[0].starts_with("Done"), "{replies:?}");
}

#[test]
fn settings_in_the_way_are_changed_then_the_call_retried() {
    let blocked = World {
        cellular: false,
        low_battery: true,
    };
    let (calls, _) = play(
        &careful(),
        &menu(),
        &["Send a message to Bart saying: Hey what's up"],
        blocked,
    );
    assert_eq!(
        calls,
        [
            ("search_contacts".to_string(), json!({"name": "Bart"})),
            (
                "send_message_with_phone_number".to_string(),
                json!({"phone_number": "+12453344098", "content": "Hey what's up"})
            ),
            (
                "set_cellular_service_status".to_string(),
                json!({"on": true})
            ),
            (
                "set_low_battery_mode_status".to_string(),
                json!({"on": false})
            ),
            (
                "set_cellular_service_status".to_string(),
                json!({"on": true})
            ),
            (
                "send_message_with_phone_number".to_string(),
                json!({"phone_number": "+12453344098", "content": "Hey what's up"})
            ),
        ]
    );
    // An agent that never recovers reports the first error instead.
    let gives_up = SimAgent::with_params(
        "sim-test-natural",
        Params {
            recover_dependency: 0.0,
            ..Params::default()
        },
    );
    let (calls, replies) = play(
        &gives_up,
        &menu(),
        &["Send a message to Bart saying: Hey what's up"],
        blocked,
    );
    assert_eq!(
        names(&calls),
        ["search_contacts", "send_message_with_phone_number"]
    );
    assert!(
        replies[0].contains("Cellular service is not enabled"),
        "{replies:?}"
    );
}

#[test]
fn a_relative_time_is_built_with_the_time_tools() {
    let (calls, replies) = play(
        &careful(),
        &menu(),
        &["Add a reminder to buy chocolate milk tomorrow 5PM"],
        ON,
    );
    assert_eq!(
        calls,
        [
            ("get_current_timestamp".to_string(), json!({})),
            (
                "timestamp_to_datetime_info".to_string(),
                json!({"timestamp": NOW})
            ),
            (
                "datetime_info_to_timestamp".to_string(),
                json!({"year": 2026, "month": 12, "day": 6, "hour": 17, "minute": 0, "second": 0})
            ),
            (
                "add_reminder".to_string(),
                json!({"content": "buy chocolate milk", "reminder_timestamp": 1796576400.0})
            ),
        ]
    );
    assert!(
        replies[0].starts_with("Done: add a reminder"),
        "{replies:?}"
    );
}

#[test]
fn days_until_a_holiday_subtract_now_from_the_holiday() {
    let (calls, replies) = play(&careful(), &menu(), &["How many days until Christmas?"], ON);
    assert_eq!(
        calls,
        [
            (
                "search_holiday".to_string(),
                json!({"holiday_name": "Christmas"})
            ),
            ("get_current_timestamp".to_string(), json!({})),
            (
                "timestamp_diff".to_string(),
                json!({"timestamp_0": NOW, "timestamp_1": 1798156800.0})
            ),
        ]
    );
    assert!(replies[0].contains("days: 19"), "{replies:?}");
}

#[test]
fn missing_values_are_asked_for_and_the_answers_used() {
    let users = [
        "I want to send a message to someone.",
        "It's Bart",
        "Hey what's up",
    ];
    let (calls, replies) = play(&careful(), &menu(), &users, ON);
    assert_eq!(
        calls,
        [
            ("search_contacts".to_string(), json!({"name": "Bart"})),
            (
                "send_message_with_phone_number".to_string(),
                json!({"phone_number": "+12453344098", "content": "Hey what's up"})
            ),
        ]
    );
    assert_eq!(replies.len(), 3, "{replies:?}");
    assert!(replies[0].contains("(`name`)"), "{replies:?}");
    assert!(replies[1].contains("(`content`)"), "{replies:?}");
}

#[test]
fn a_task_no_tool_can_do_is_declined() {
    let (calls, replies) = play(
        &careful(),
        &menu(),
        &["What's the stock price of Apple?"],
        ON,
    );
    assert!(calls.is_empty(), "{calls:?}");
    assert!(replies[0].contains("can't help"), "{replies:?}");
}

#[test]
fn tools_are_scored_by_the_words_they_share_with_the_task() {
    let m = menu();
    let best = |text: &str| {
        let s = choose::scores(&m, text);
        let i = (0..s.len()).max_by(|&a, &b| s[a].total().total_cmp(&s[b].total()).then(b.cmp(&a)));
        i.map(|i| m[i].name.clone()).unwrap_or_default()
    };
    assert_eq!(
        best("Turn off cellular service"),
        "set_cellular_service_status"
    );
    assert_eq!(
        best("Send a message to Bart"),
        "send_message_with_phone_number"
    );
    assert_eq!(best("How many days until Christmas?"), "timestamp_diff");
    assert_eq!(
        best("Add a reminder to buy chocolate milk tomorrow 5PM"),
        "add_reminder"
    );
    assert_eq!(best("Can you enable wifi?"), "set_wifi_status");
}

#[test]
fn exceptions_that_name_a_setting_say_which_way_it_must_go() {
    assert_eq!(
        dependency("Cellular service is not enabled."),
        Some(("cellular service".into(), true))
    );
    assert_eq!(
        dependency("Cellular service cannot be turned on in low battery mode"),
        Some(("low battery mode".into(), false))
    );
    assert_eq!(
        dependency("Location service is not enabled."),
        Some(("location service".into(), true))
    );
    assert_eq!(dependency("No db entry matching person_id='x' found"), None);
}

#[test]
fn distractions_move_nothing_at_neutral_confusion_and_dilute_attention_when_it_is_on() {
    let with: Vec<ToolSchema> = distractions().into_iter().chain(menu()).collect();
    let task = "Send a message to Bart saying: Hey what's up";
    let (plain, _) = play(&careful(), &menu(), &[task], ON);
    let (crowded, _) = play(&careful(), &with, &[task], ON);
    assert_eq!(plain, crowded);
    // Fully diluted attention (0.24 at 24 schemas), across agents (each its own draws):
    // about a quarter start on another tool (a call, or a question for its parameters).
    let strays = (0..80)
        .filter(|k| {
            let p = Params {
                menu_dilution: 1.0,
                run_variance: 0.0,
                ..Params::default()
            };
            let agent = SimAgent::with_params(&format!("sim-test-dilute-{k}"), p);
            let r = agent.respond(&request(
                &[Message::User {
                    content: task.into(),
                }],
                &with,
            ));
            r.tool_calls
                .first()
                .is_none_or(|c| c.name != "search_contacts")
        })
        .count();
    assert!((8..=32).contains(&strays), "{strays}");
}

#[test]
fn more_distraction_tools_never_reduce_the_reasoning_spend() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let spend = |agent: &SimAgent, tools: &[ToolSchema], seed: u64| {
        let mut req = request(
            &[Message::User {
                content: "Turn on wifi".into(),
            }],
            tools,
        );
        req.sampling.seed = Some(seed);
        agent.respond(&req).raw["reasoning_tokens"]
            .as_u64()
            .unwrap_or(0)
    };
    let base = menu();
    for case in 0..64 {
        let p = Params {
            reasoning_base: rng.random::<f64>() * 500.0,
            reasoning_per_schema: rng.random::<f64>() * 8.0,
            reasoning_per_ktok: rng.random::<f64>() * 20.0,
            reasoning_sigma: rng.random::<f64>(),
            reasoning_spike: rng.random::<f64>() * 0.2,
            spike_per_100_schemas: rng.random::<f64>(),
            spike_factor: 1.0 + rng.random::<f64>() * 9.0,
            ..Params::default()
        };
        let agent = SimAgent::with_params(&format!("sim-test-spend-{case}"), p);
        let seed: u64 = rng.random();
        let mut tools = base.clone();
        let mut last = spend(&agent, &tools, seed);
        for d in distractions() {
            tools.insert(0, d);
            let now = spend(&agent, &tools, seed);
            assert!(
                now >= last,
                "case {case}: {now} < {last} at {} tools",
                tools.len()
            );
            last = now;
        }
    }
}

#[test]
fn with_recovery_off_a_setting_named_in_an_error_moves_nothing() {
    // The structure `recover_dependency` reads is an exception naming a setting that a
    // visible tool changes; at 0, that the menu has the tool makes no difference.
    let p = Params {
        recover_dependency: 0.0,
        ..Params::default()
    };
    let agent = SimAgent::with_params("sim-test-natural", p);
    let convo = |tools: &[ToolSchema]| {
        let msgs = vec![
            Message::User {
                content: "Send a message to +12453344098 saying hi".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "send_message_with_phone_number".into(),
                    arguments: r#"{"phone_number":"+12453344098","content":"hi"}"#.into(),
                }],
            },
            Message::Tool {
                call_id: "call_1".into(),
                name: "send_message_with_phone_number".into(),
                content: "PermissionError: Cellular service is not enabled.".into(),
            },
        ];
        let r = agent.respond(&request(&msgs, tools));
        (r.text, r.tool_calls)
    };
    let without: Vec<ToolSchema> = menu()
        .into_iter()
        .filter(|t| t.name != "set_cellular_service_status")
        .collect();
    assert_eq!(convo(&menu()), convo(&without));
}

#[test]
fn tbb_requests_still_take_the_structured_path() {
    // A request that parses as tbb's never reaches this module: the natural reading
    // only starts where `parse` fails. Here a plain request does fail to parse.
    assert!(crate::sim::parse::parse("Turn off cellular service").is_err());
}

/// The full menu: the examples' tools, the distractions, and two more of ToolSandbox's.
fn everything() -> Vec<ToolSchema> {
    let mut all: Vec<ToolSchema> = menu().into_iter().chain(distractions()).collect();
    all.push(tool("add_contact", "Add a new contact person to contact database.", json!({
        "name": text("Name of contact person"), "phone_number": text("Phone number of contact person"),
        "relationship": text("Optional, relationship between user and this contact"),
        "is_self": flag("Optional. Defaults to False.")}), &["name", "phone_number"]));
    all.push(tool(
        "get_current_location",
        "Request current location latitude and longitude",
        json!({}),
        &[],
    ));
    all
}

/// The agent's first call on a one-message task.
fn first_call(task: &str) -> Option<(String, Json)> {
    let r = careful().respond(&request(
        &[Message::User {
            content: task.into(),
        }],
        &everything(),
    ));
    r.tool_calls.first().map(|c| {
        (
            c.name.clone(),
            serde_json::from_str(&c.arguments).unwrap_or(Json::Null),
        )
    })
}

#[test]
fn arguments_are_filled_by_name_and_type() {
    let call = |name: &str, args: Json| Some((name.to_string(), args));
    assert_eq!(
        first_call("What's my phone number?"),
        call("search_contacts", json!({"is_self": true}))
    );
    assert_eq!(
        first_call("Convert 25 celsius to fahrenheit"),
        call(
            "unit_conversion",
            json!({"amount": 25.0, "from_unit": "celsius", "to_unit": "fahrenheit"})
        )
    );
    assert_eq!(
        first_call("Add Fredrik Thordendal to my contacts, his number is +12453344098"),
        call(
            "add_contact",
            json!({"name": "Fredrik Thordendal", "phone_number": "+12453344098"})
        )
    );
    assert_eq!(
        first_call("Text my mom that I'm running late"),
        call("search_contacts", json!({"relationship": "mom"}))
    );
    assert_eq!(
        first_call("Is my wifi on?"),
        call("get_wifi_status", json!({}))
    );
    assert_eq!(
        first_call("Where am I?"),
        call("get_current_location", json!({}))
    );
    assert_eq!(
        first_call("What's the weather like in Cupertino tomorrow?"),
        call("search_weather_around_lat_lon", json!({"days": 1}))
    );
    assert_eq!(
        first_call("Delete Bart from my contacts"),
        call("search_contacts", json!({"name": "Bart"}))
    );
}

#[test]
fn a_count_since_a_date_subtracts_the_date_from_now() {
    let (calls, _) = play(&careful(), &menu(), &["How many days since Halloween?"], ON);
    let last = calls.last().map(|(_, a)| a.clone()).unwrap_or(Json::Null);
    assert_eq!(
        last,
        json!({"timestamp_0": 1798156800.0, "timestamp_1": NOW})
    );
}

#[test]
fn the_cap_truncates_a_natural_request_as_it_does_tbbs() {
    let p = Params {
        reasoning_base: 2_000.0,
        reasoning_sigma: 0.0,
        ..Params::default()
    };
    let agent = SimAgent::with_params("sim-test-natural", p);
    let mut req = request(
        &[Message::User {
            content: "Turn off cellular service".into(),
        }],
        &menu(),
    );
    req.max_completion_tokens = 1_024;
    let r = agent.respond(&req);
    assert_eq!(
        (r.finish, r.tool_calls.len(), r.text),
        (crate::Finish::Length, 0, None)
    );
    req.max_completion_tokens = 4_096;
    assert_eq!(agent.respond(&req).tool_calls.len(), 1);
}
