//! The next move in a natural-language task, re-derived from the conversation on every
//! request:
//!
//! 1. the last result is an exception that names a setting (`Cellular service is not
//!    enabled`, `… cannot be turned on in low battery mode`) → with `recover_dependency`
//!    (drawn once per setting) call the tool that changes it, the right way; otherwise,
//!    or for any other exception, tell the user what went wrong;
//! 2. a call failed on a setting that has since been changed → retry it;
//! 3. choose the tool the task asks for ([`super::choose`]; none relevant → say no tool
//!    can help); once it has returned, report the result ([`super::reply::outcome`]);
//! 4. fill its parameters ([`super::fill`]); a required value found nowhere comes from
//!    a *producer*: a reading tool whose name, description and parameters mention the
//!    value (a contact search for a phone number), itself filled the same way; a
//!    timestamp comes from the time tools (current timestamp → its date information →
//!    the date meant as a timestamp; a holiday search; a shift) found by what their
//!    schemas say they produce; what none of this yields, the agent asks the user for.
//!
//! Never: reads anything but the request; every choice that could go either way is a
//! draw of [`crate::sim::draws`] under a name of its own.

use rand::RngExt;
use serde_json::{json, Map, Value as Json};

use super::choose;
use super::fill::{self, Param};
use super::pyrepr::Reading;
use super::reply;
use super::task::{Event, Task};
use super::time::{days_from_civil, Today, When};
use super::words;
use crate::sim::draws::Salts;
use crate::sim::params::Params;
use crate::ToolSchema;

/// What the agent does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Call tool `tool` (menu index) with these arguments.
    Call(usize, Map<String, Json>, &'static str),
    /// Ask the user for a parameter of a tool.
    Ask(usize, Param),
    /// Say this and end the turn.
    Say(String, &'static str),
}

/// The planner of one request.
pub struct Planner<'a> {
    tools: &'a [ToolSchema],
    task: &'a Task,
    when: When,
    params: &'a Params,
    salts: Salts,
}

/// Why a producer was given up: nothing to feed it.
const NO_WAY: &str = "no way to look it up";

const READ_VERBS: &[&str] = &[
    "search", "get", "find", "lookup", "list", "read", "request", "query",
];

impl<'a> Planner<'a> {
    /// A planner for `task` over the visible `tools`.
    pub fn new(tools: &'a [ToolSchema], task: &'a Task, params: &'a Params, salts: Salts) -> Self {
        Planner {
            tools,
            task,
            when: When::read(&task.text()),
            params,
            salts,
        }
    }

    /// The next step.
    pub fn next(&self) -> Step {
        if let Some(last) = self.task.events.last() {
            if let Reading::Error { message, .. } = &last.reading {
                return self.after_error(last, message);
            }
            if let Some((tool, args)) = self.pending().pop() {
                if let Some(i) = self.index(&tool) {
                    return Step::Call(i, args, "retry after changing a setting");
                }
            }
        }
        let text = super::extract::without_quote(&self.task.request());
        let mut rng = self.salts.draws(&[b"natural goal"]);
        let Some((goal, _)) = choose::choose(self.tools, &text, self.params, &mut rng) else {
            return Step::Say(reply::cannot_help(), "no tool fits the task");
        };
        let name = &self.tools[goal].name;
        if let Some(done) = self
            .task
            .events
            .iter()
            .rev()
            .find(|e| &e.tool == name && e.succeeded())
        {
            return Step::Say(
                reply::outcome(&self.tools[goal], &done.args, &done.reading),
                "report the result",
            );
        }
        match self.resolve(goal, 0) {
            Step::Call(i, args, _) if self.done(i, &args) => Step::Say(
                reply::cannot_complete("I could not find what the task needs."),
                "stuck: the call was made",
            ),
            step => step,
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|t| t.name == name)
    }

    fn done(&self, i: usize, args: &Map<String, Json>) -> bool {
        let name = &self.tools[i].name;
        self.task
            .events
            .iter()
            .any(|e| e.succeeded() && e.is(name, args))
    }

    /// Calls that failed on a setting and have not succeeded since, oldest first.
    fn pending(&self) -> Vec<(String, Map<String, Json>)> {
        let mut stack: Vec<(String, Map<String, Json>)> = Vec::new();
        for e in &self.task.events {
            let top_is_this = stack.last().is_some_and(|(t, a)| e.is(t, a));
            match &e.reading {
                Reading::Error { message, .. } if dependency(message).is_some() && !top_is_this => {
                    stack.push((e.tool.clone(), e.args.clone()));
                }
                _ if e.succeeded() && top_is_this => {
                    stack.pop();
                }
                _ => {}
            }
        }
        stack
    }

    fn after_error(&self, last: &Event, message: &str) -> Step {
        let failures = self
            .task
            .events
            .iter()
            .filter(|e| !e.succeeded() && e.is(&last.tool, &last.args))
            .count();
        let Some((setting, on)) = dependency(message) else {
            return Step::Say(reply::cannot_complete(message), "report the error");
        };
        let mut rng = self.salts.draws(&[b"natural recover", setting.as_bytes()]);
        let recovers = rng.random::<f64>() < self.params.recover_dependency;
        match self.setter(&setting) {
            Some((i, key)) if recovers && failures < 3 => {
                let mut args = Map::new();
                args.insert(key, json!(on));
                Step::Call(i, args, "change the setting the error names")
            }
            _ => Step::Say(reply::cannot_complete(message), "report the error"),
        }
    }

    /// The tool that switches the named setting, and its switch parameter: a tool with
    /// a boolean parameter that sets or enables, whose words best match the setting's.
    fn setter(&self, setting: &str) -> Option<(usize, String)> {
        let want = words::stems(setting);
        let mut best: Option<(f64, usize, String)> = None;
        for (i, t) in self.tools.iter().enumerate() {
            let switch = fill::params(t)
                .into_iter()
                .find(|p| p.ty == "boolean" && p.required);
            let Some(switch) = switch else { continue };
            let (name, rest) = choose::tool_words(t);
            let sets = name.first().is_some_and(|w| w == "set")
                || rest.iter().any(|w| w == "enabl" || w == "disabl");
            let score: f64 = want
                .iter()
                .map(|w| {
                    if name.contains(w) {
                        2.0
                    } else if rest.contains(w) {
                        1.0
                    } else {
                        0.0
                    }
                })
                .sum();
            if sets && score > 0.0 && best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, i, switch.name));
            }
        }
        best.map(|(_, i, k)| (i, k))
    }

    /// The call (or question) that brings tool `i` closer to being called.
    fn resolve(&self, i: usize, depth: usize) -> Step {
        let t = &self.tools[i];
        let ps = fill::params(t);
        let mut args = Map::new();
        let stamps: Vec<&Param> = ps
            .iter()
            .filter(|p| p.required && p.is_timestamp())
            .collect();
        if !stamps.is_empty() {
            match self.timestamps(i, &stamps) {
                Ok(values) => args.extend(values),
                Err(step) => return step,
            }
        }
        for p in ps.iter().filter(|p| !p.is_timestamp()) {
            let v = fill::from_user(p, self.task).or_else(|| {
                p.required
                    .then(|| fill::from_results(p, self.task))
                    .flatten()
            });
            match v {
                Some(v) => {
                    args.insert(p.name.clone(), v);
                }
                None if p.required => {
                    if depth < 3 {
                        if let Some(j) = self.producer(p, i) {
                            match self.resolve(j, depth + 1) {
                                Step::Call(j, a, _) if self.done(j, &a) => {}
                                Step::Call(j, a, _) => {
                                    return Step::Call(j, a, "look up a value the task needs")
                                }
                                Step::Say(_, NO_WAY) => {}
                                step => return step,
                            }
                        }
                    }
                    return Step::Ask(i, p.clone());
                }
                None => {}
            }
        }
        if depth > 0 && args.is_empty() && !ps.is_empty() {
            // A search with nothing to search by: ask for the name it would search by
            // (who or what the user means); without one, it is no way to the value.
            return match ps.iter().find(|p| p.has("name")) {
                Some(p) => Step::Ask(i, p.clone()),
                None => Step::Say(String::new(), NO_WAY),
            };
        }
        Step::Call(
            i,
            args,
            if depth == 0 {
                "do what the task asks"
            } else {
                "look up a value the task needs"
            },
        )
    }

    /// A reading tool whose schema mentions the value `p` of tool `of`: its name and
    /// parameters share the value's words (a parameter of exactly that name counts
    /// most), and the task's words break ties.
    fn producer(&self, p: &Param, of: usize) -> Option<usize> {
        let want = p.stems();
        let text = self.task.text();
        let mut best: Option<(f64, usize)> = None;
        for (j, t) in self.tools.iter().enumerate() {
            let first = words::words(&t.name).into_iter().next().unwrap_or_default();
            if j == of || !READ_VERBS.contains(&first.as_str()) {
                continue;
            }
            let (name, rest) = choose::tool_words(t);
            let mut score: f64 = want
                .iter()
                .map(|w| {
                    if name.contains(w) {
                        2.0
                    } else if rest.contains(w) {
                        1.0
                    } else {
                        0.0
                    }
                })
                .sum();
            if score == 0.0 {
                continue;
            }
            if t.parameters["properties"].get(&p.name).is_some() {
                score += 2.0;
            }
            score += 0.25 * choose::score(t, &text).topical;
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, j));
            }
        }
        best.map(|(_, j)| j)
    }

    /// The values of tool `i`'s timestamp parameters, or the step that gets them.
    fn timestamps(&self, i: usize, stamps: &[&Param]) -> Result<Vec<(String, Json)>, Step> {
        if !self.when.is_some() {
            return Err(Step::Ask(i, stamps[0].clone()));
        }
        let event = self.event_stamp(i, stamps[0])?;
        if stamps.len() == 1 {
            return Ok(vec![(stamps[0].name.clone(), json!(event))]);
        }
        // Two timestamps and one time named: the other is now. The one the description
        // subtracts from (`a - b`) takes the later of the two.
        let now = self.now()?;
        let (later, earlier) = if self.when.later {
            (event, now)
        } else {
            (now, event)
        };
        let minuend = minuend(&self.tools[i].description, stamps).unwrap_or(stamps.len() - 1);
        Ok(stamps
            .iter()
            .enumerate()
            .map(|(k, p)| {
                (
                    p.name.clone(),
                    json!(if k == minuend { later } else { earlier }),
                )
            })
            .collect())
    }

    fn role(&self, want: &[&str], fits: impl Fn(&ToolSchema, &[Param]) -> bool) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, t) in self.tools.iter().enumerate() {
            if !fits(t, &fill::params(t)) {
                continue;
            }
            let name = words::stems(&t.name);
            let desc = words::stems(&t.description);
            let n = want
                .iter()
                .filter(|w| name.contains(&words::stem(w)) || desc.contains(&words::stem(w)))
                .count();
            if n > 0 && best.is_none_or(|(b, _)| n > b) {
                best = Some((n, i));
            }
        }
        best.map(|(_, i)| i)
    }

    fn stamp_result(&self, tool: usize, args: &Map<String, Json>) -> Option<&Reading> {
        let name = &self.tools[tool].name;
        self.task
            .events
            .iter()
            .rev()
            .find(|e| e.is(name, args))
            .map(|e| &e.reading)
    }

    /// The current timestamp, from the tool that reports it.
    fn now(&self) -> Result<f64, Step> {
        let tool = self
            .role(&["current", "timestamp", "now"], |t, ps| {
                ps.iter().all(|p| !p.required)
                    && choose::tool_words(t).0.iter().any(|w| w == "timestamp")
            })
            .ok_or_else(|| {
                Step::Say(
                    reply::cannot_complete("I have no tool that tells the time."),
                    "no clock",
                )
            })?;
        let name = &self.tools[tool].name;
        let found = self
            .task
            .events
            .iter()
            .rev()
            .find_map(|e| match &e.reading {
                Reading::Value(v) if &e.tool == name => v.as_f64(),
                _ => None,
            });
        found.ok_or_else(|| Step::Call(tool, Map::new(), "get the current time"))
    }

    /// The timestamp of the time the task names.
    fn event_stamp(&self, i: usize, stamp: &Param) -> Result<f64, Step> {
        let w = &self.when;
        let has = |ps: &[Param], s: &str| ps.iter().any(|p| p.has(s));
        let settle = |tool: usize, args: Map<String, Json>, why| match self
            .stamp_result(tool, &args)
        {
            Some(Reading::Value(v)) if v.as_f64().is_some() => Ok(v.as_f64().unwrap_or_default()),
            Some(Reading::Value(_)) => Err(Step::Say(
                reply::cannot_complete("the date could not be found."),
                "no such date",
            )),
            _ => Err(Step::Call(tool, args, why)),
        };
        if let Some(h) = &w.holiday {
            let tool = self
                .role(&["holiday"], |_, ps| has(ps, "holiday"))
                .ok_or_else(|| Step::Say(reply::cannot_help(), "no holiday tool"))?;
            let key = fill::params(&self.tools[tool])
                .into_iter()
                .find(|p| p.has("holiday"))
                .map(|p| p.name)
                .unwrap_or_default();
            let mut args = Map::new();
            args.insert(key, json!(h));
            return settle(tool, args, "look up the holiday");
        }
        if let Some((unit, n)) = w.shift {
            let now = self.now()?;
            let tool = self
                .role(&["shift", "timestamp"], |_, ps| {
                    ps.iter().any(|p| p.required && p.is_timestamp())
                        && ps.iter().any(|p| p.name == unit)
                })
                .ok_or_else(|| Step::Say(reply::cannot_help(), "no shift tool"))?;
            let key = fill::params(&self.tools[tool])
                .into_iter()
                .find(Param::is_timestamp)
                .map(|p| p.name)
                .unwrap_or_default();
            let mut args = Map::new();
            args.insert(key, json!(now));
            args.insert(unit.to_string(), json!(n));
            return settle(tool, args, "shift the current time");
        }
        let today = match w.date {
            Some((Some(y), m, d)) => Today {
                year: y,
                month: m,
                day: d,
                weekday: 1,
            },
            _ => self.today()?,
        };
        let Some((y, mo, d, h, mi)) = w.resolve(today) else {
            return Err(Step::Ask(i, stamp.clone()));
        };
        let tool = self
            .role(&["timestamp"], |_, ps| {
                ["year", "month", "day"]
                    .iter()
                    .all(|k| ps.iter().any(|p| p.required && p.name == *k))
            })
            .ok_or_else(|| Step::Say(reply::cannot_help(), "no date tool"))?;
        let mut args = Map::new();
        for p in fill::params(&self.tools[tool])
            .into_iter()
            .filter(|p| p.required)
        {
            let v = match p.name.as_str() {
                "year" => json!(y),
                "month" => json!(mo),
                "day" => json!(d),
                "hour" => json!(h),
                "minute" => json!(mi),
                _ => json!(0),
            };
            args.insert(p.name, v);
        }
        settle(tool, args, "turn the date into a timestamp")
    }

    /// Today's date: the current timestamp's date information from the tool that
    /// converts it (read by the agent itself only when no tool does).
    fn today(&self) -> Result<Today, Step> {
        let now = self.now()?;
        let tool = self.role(
            &["datetime", "date", "info", "year", "month", "day"],
            |t, ps| {
                let req: Vec<&Param> = ps.iter().filter(|p| p.required).collect();
                req.len() == 1 && req[0].is_timestamp() && choose::tool_words(t).0.len() > 1
            },
        );
        let Some(tool) = tool else {
            let (y, m, d) = super::time::civil_from_days((now / 86_400.0).floor() as i64);
            return Ok(today_of(y, m, d, None));
        };
        let key = fill::params(&self.tools[tool])
            .into_iter()
            .find(Param::is_timestamp)
            .map(|p| p.name)
            .unwrap_or_default();
        let mut args = Map::new();
        args.insert(key, json!(now));
        match self.stamp_result(tool, &args) {
            Some(Reading::Value(v)) => {
                let n = |k: &str| v.get(k).and_then(Json::as_i64);
                match (n("year"), n("month"), n("day")) {
                    (Some(y), Some(m), Some(d)) => Ok(today_of(
                        y,
                        m as u32,
                        d as u32,
                        n("isoweekday").or(n("weekday")),
                    )),
                    _ => Err(Step::Say(
                        reply::cannot_complete("the date information was unreadable."),
                        "unreadable date",
                    )),
                }
            }
            _ => Err(Step::Call(tool, args, "read today's date")),
        }
    }
}

fn today_of(y: i64, m: u32, d: u32, weekday: Option<i64>) -> Today {
    let weekday = weekday.map_or_else(
        || (days_from_civil(y, m, d) + 3).rem_euclid(7) as u32 + 1,
        |w| w as u32,
    );
    Today {
        year: y,
        month: m,
        day: d,
        weekday,
    }
}

/// The parameter a description subtracts from (`timestamp_1 - timestamp_0`).
fn minuend(description: &str, stamps: &[&Param]) -> Option<usize> {
    let compact: String = description.split_whitespace().collect();
    stamps.iter().position(|p| {
        stamps
            .iter()
            .any(|q| q.name != p.name && compact.contains(&format!("{}-{}", p.name, q.name)))
    })
}

/// The setting an exception names and whether it must be on: `X is not enabled` → X
/// on; `… cannot … in X` or `X is enabled` → X off.
pub fn dependency(message: &str) -> Option<(String, bool)> {
    let m = message.trim().trim_end_matches(['.', '!']).to_lowercase();
    let blocked = [
        "cannot",
        "can't",
        "not allowed",
        "unable",
        "not possible",
        "not available",
    ];
    if let Some(at) = m.rfind(" in ").or_else(|| m.rfind(" while ")) {
        if blocked.iter().any(|b| m[..at].contains(b)) {
            let setting = m[at..]
                .trim_start_matches(" in ")
                .trim_start_matches(" while ");
            return Some((setting.trim_start_matches("the ").to_string(), false));
        }
    }
    for (marker, on) in [
        (" is not enabled", true),
        (" is disabled", true),
        (" is not on", true),
        (" is not turned on", true),
        (" is off", true),
        (" is turned off", true),
        (" needs to be enabled", true),
        (" is enabled", false),
        (" is on", false),
    ] {
        if let Some(at) = m.find(marker) {
            let subject = m[..at].trim().trim_start_matches("the ");
            if !subject.is_empty() {
                return Some((subject.to_string(), on));
            }
        }
    }
    None
}
