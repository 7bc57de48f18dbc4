//! The agent's reading of its own conversation, and its next move.
//!
//! The agent is stateless across calls: every request, it re-reads the conversation —
//! the system prompt, the user request, its own earlier calls and their results — and
//! rebuilds what it knows ([`State`]): the searches it made and their hits, the records
//! it read (and what it took from them), the hand-offs it has followed, the writes it has
//! made, whether something has gone wrong (an error or an empty search alerts it). From
//! that state it picks the next move ([`State::plan`]):
//!
//! 1. all requested facts in hand → decide by the policy; make the requested state
//!    change once if its condition holds (an overeager writer may make another); answer;
//! 2. the latest search has hits none of which has been read → read one (stale
//!    confusion may pick a superseded version);
//! 3. the latest record read names a hand-off not yet searched → follow it (per-hop
//!    reliability; a failure answers at once, guessing, or repeats the previous search);
//! 4. a current hit is still unread (the agent read a superseded version, found no
//!    hand-off, and may notice) → read it;
//! 5. nothing searched on the route yet → search the start query (route confusion may
//!    pick a look-alike connector, unless something already went wrong);
//! 6. otherwise → answer with what it has, guessing the rest.
//!
//! How the agent *perceived* a record (which values it misread) is drawn from an RNG
//! seeded by the result's place in the conversation, so re-reading it on a later request
//! reproduces the same perception. Choices of action are drawn from the request's RNG;
//! once acted on, they are part of the conversation.

use std::collections::{HashMap, HashSet};

use rand::RngExt;
use serde_json::{json, Map, Value as Json};

use super::draws::{Draws, Salts};
use super::instructions::Instructions;
use super::mechanisms::{self, Confusion, ReadInputs};
use super::menu::{split_name, Menu, ToolOp};
use super::observe::{self, Handoff, Object, Observation};
use super::params::Params;
use super::parse::{ArgValue, FieldType, Request};
use crate::{ChatRequest, Message};

/// One executed call and its result, as found in the conversation.
#[derive(Debug, Clone)]
pub struct Event {
    /// Call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Parsed arguments (`None` when the string was not a JSON object).
    pub args: Option<Map<String, Json>>,
    /// The result.
    pub observation: Observation,
    /// The result's place among the conversation's messages: it names the draws of the
    /// agent's perception of it (with the call id), the same on every later request.
    pub index: usize,
    /// Prompt tokens up to and including this result (schemas of the current menu
    /// included), the context in which the agent read it.
    pub context_tokens: u64,
    /// Tokens of this result alone: the view the agent read it in.
    pub view_tokens: u64,
}

/// The conversation, read.
#[derive(Debug, Clone)]
pub struct Conversation<'a> {
    /// System text (all system messages).
    pub system: String,
    /// The first user message.
    pub request_text: Option<&'a str>,
    /// Executed calls in order.
    pub events: Vec<Event>,
    /// Tool calls the agent has written so far (for fresh call ids).
    pub calls_written: usize,
}

/// Reads the conversation. `message_tokens[i]` are the tokens of message `i`;
/// `menu_tokens` those of the visible schemas.
pub fn read_conversation<'a>(
    request: &'a ChatRequest,
    message_tokens: &[u64],
    menu_tokens: u64,
) -> Conversation<'a> {
    let mut system = String::new();
    let mut request_text = None;
    let mut calls: HashMap<&str, (&str, &str)> = HashMap::new();
    let mut events = Vec::new();
    let mut calls_written = 0;
    let mut running = menu_tokens;
    for (i, m) in request.messages.iter().enumerate() {
        running += message_tokens.get(i).copied().unwrap_or(0);
        match m {
            Message::System { content } => {
                system.push_str(content);
                system.push('\n');
            }
            Message::User { content } => {
                if request_text.is_none() {
                    request_text = Some(content.as_str());
                }
            }
            Message::Assistant { tool_calls, .. } => {
                calls_written += tool_calls.len();
                for c in tool_calls {
                    calls.insert(c.id.as_str(), (c.name.as_str(), c.arguments.as_str()));
                }
            }
            Message::Tool {
                call_id,
                name,
                content,
            } => {
                let (tool, raw_args) = calls
                    .get(call_id.as_str())
                    .copied()
                    .unwrap_or((name.as_str(), ""));
                let args = serde_json::from_str::<Json>(raw_args)
                    .ok()
                    .and_then(|v| v.as_object().cloned());
                events.push(Event {
                    call_id: call_id.clone(),
                    tool: tool.to_string(),
                    args,
                    observation: observe::read(content),
                    index: i,
                    context_tokens: running,
                    view_tokens: message_tokens.get(i).copied().unwrap_or(0),
                });
            }
        }
    }
    Conversation {
        system,
        request_text,
        events,
        calls_written,
    }
}

/// Where a fact came from, as the agent believes.
#[derive(Debug, Clone, PartialEq)]
pub struct FactSource {
    /// The value taken (possibly misread).
    pub value: Json,
    /// Id of the record it came from.
    pub record: String,
    /// 3 route & current, 2 route & superseded, 1 elsewhere & current, 0 elsewhere.
    pub rank: u8,
}

#[derive(Debug, Clone)]
struct Search {
    tool: String,
    connector: String,
    query: String,
    objects: Vec<Object>,
    dead: bool,
}

#[derive(Debug, Clone)]
struct Read {
    id: String,
    handoff: Option<Handoff>,
}

/// A record whose values the agent doubted (a value of the wrong type).
#[derive(Debug, Clone)]
struct Doubt {
    id: String,
    tool: String,
    facts: Vec<String>,
}

/// What the agent knows after re-reading the conversation.
#[derive(Debug, Clone)]
pub struct State<'r> {
    request: &'r Request,
    asked: Instructions,
    route_connector: Option<String>,
    searches: Vec<(usize, Search)>,
    reads: Vec<Read>,
    read_ids: HashSet<String>,
    doubts: Vec<Doubt>,
    /// Facts in hand.
    pub facts: HashMap<String, FactSource>,
    followed: HashSet<String>,
    /// An error or an empty search has put the agent on its guard.
    pub alerted: bool,
    /// Some call has returned records or applied a change.
    pub located: bool,
    writes_ok: Vec<String>,
    write_attempts: HashMap<String, usize>,
    calls_written: usize,
    salts: Salts,
}

/// The agent's next move.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Call a tool.
    Call {
        /// Tool name.
        tool: String,
        /// Arguments.
        args: Json,
        /// Why (for the raw record).
        why: &'static str,
    },
    /// Reply with the answer text.
    Answer {
        /// The text.
        text: String,
        /// Why.
        why: &'static str,
    },
}

fn arg_text(args: &Option<Map<String, Json>>, key: &str) -> String {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

impl<'r> State<'r> {
    /// Rebuilds the state from the conversation.
    pub fn build(
        request: &'r Request,
        conversation: &Conversation,
        menu: &Menu,
        params: &Params,
        asked: Instructions,
        salts: Salts,
    ) -> State<'r> {
        let route_connector = menu
            .route_search(&request.route)
            .map(|t| t.connector.clone());
        let mut st = State {
            request,
            asked,
            route_connector,
            searches: Vec::new(),
            reads: Vec::new(),
            read_ids: HashSet::new(),
            doubts: Vec::new(),
            facts: HashMap::new(),
            followed: HashSet::new(),
            alerted: false,
            located: false,
            writes_ok: Vec::new(),
            write_attempts: HashMap::new(),
            calls_written: conversation.calls_written,
            salts,
        };
        let mut handoffs: HashSet<String> = HashSet::new();
        for (i, ev) in conversation.events.iter().enumerate() {
            let (connector, op, _) = split_name(&ev.tool);
            match (&ev.observation, op) {
                (Observation::Records { objects, .. }, Some(ToolOp::Search)) => {
                    let query = arg_text(&ev.args, "query");
                    if objects.is_empty() {
                        st.alerted = true;
                    } else {
                        st.located = true;
                    }
                    if handoffs.contains(&query) {
                        st.followed.insert(query.clone());
                    }
                    st.searches.push((
                        i,
                        Search {
                            tool: ev.tool.clone(),
                            connector,
                            query,
                            objects: objects.clone(),
                            dead: false,
                        },
                    ));
                }
                (
                    Observation::Records {
                        objects, layout, ..
                    },
                    Some(ToolOp::Read),
                ) => {
                    let Some(o) = objects.first() else {
                        st.alerted = true;
                        continue;
                    };
                    st.located = true;
                    st.perceive(o, &connector, *layout, ev, params);
                    if let Some(h) = &o.handoff {
                        handoffs.insert(h.query.clone());
                    }
                    st.read_ids.insert(o.id.clone());
                    st.reads.push(Read {
                        id: o.id.clone(),
                        handoff: o.handoff.clone(),
                    });
                }
                (Observation::Applied, _) => {
                    st.located = true;
                    st.writes_ok.push(ev.tool.clone());
                }
                (Observation::Error { .. }, op) => {
                    st.alerted = true;
                    if op.is_some_and(ToolOp::writes) {
                        *st.write_attempts.entry(ev.tool.clone()).or_default() += 1;
                    }
                    if op == Some(ToolOp::Read) {
                        let id = arg_text(&ev.args, "id");
                        for (_, s) in &mut st.searches {
                            if s.objects.iter().any(|o| o.id == id) {
                                s.dead = true;
                            }
                        }
                    }
                }
                _ => st.alerted = true,
            }
        }
        st
    }

    /// Takes the requested facts from a record, with misreads drawn from the record's
    /// own perception seed.
    fn perceive(
        &mut self,
        o: &Object,
        connector: &str,
        layout: observe::Layout,
        ev: &Event,
        params: &Params,
    ) {
        let requested: Vec<usize> = o
            .fields
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| self.request.facts.iter().any(|f| f == k))
            .map(|(i, _)| i)
            .collect();
        if requested.is_empty() {
            return;
        }
        // Named by the result's place in the conversation, not its text: drawn only for
        // the records the agent reads, a few bytes to hash.
        let mut rng = self.salts.draws(&[
            b"perceive",
            &(ev.index as u64).to_le_bytes(),
            ev.call_id.as_bytes(),
        ]);
        let on_route = self.route_connector.as_deref() == Some(connector);
        let current = o.status == "current";
        let rank = 2 * u8::from(on_route) + u8::from(current);
        let mut doubted = Vec::new();
        let facts_in_record = requested.len();
        for i in requested {
            let (name, value) = &o.fields[i];
            let p = mechanisms::misread_probability(
                params,
                ReadInputs {
                    layout,
                    positions: o.positions(i),
                    view_tokens: ev.view_tokens,
                    facts_in_record,
                    hops_followed: self.followed.len(),
                    prompt_tokens: ev.context_tokens,
                    asked: self.asked,
                },
            );
            let roll: f64 = rng.random();
            let side: bool = rng.random();
            let notice: f64 = rng.random();
            let value = if roll < p {
                misread(o, i, side).unwrap_or_else(|| value.clone())
            } else {
                value.clone()
            };
            let fits = self
                .request
                .schema
                .fields
                .iter()
                .find(|(f, _)| f == name)
                .is_none_or(|(_, ty)| fits(&value, *ty));
            if !fits && notice < params.type_check {
                doubted.push(name.clone());
                continue;
            }
            let better = self.facts.get(name).is_none_or(|f| rank >= f.rank);
            if better {
                self.facts.insert(
                    name.clone(),
                    FactSource {
                        value,
                        record: o.id.clone(),
                        rank,
                    },
                );
            }
        }
        if !doubted.is_empty() {
            self.doubts.push(Doubt {
                id: o.id.clone(),
                tool: ev.tool.clone(),
                facts: doubted,
            });
        }
    }

    fn missing(&self) -> bool {
        self.request
            .facts
            .iter()
            .any(|f| !self.facts.contains_key(f))
    }

    /// The next move. `schemas` is the number of visible tool schemas.
    pub fn plan(&self, menu: &Menu, params: &Params, rng: &mut Draws) -> Action {
        if !self.missing() {
            return self.conclude(menu, params, rng);
        }
        // 1b. A record whose values did not fit the schema: read it again.
        if let Some(d) = self
            .doubts
            .iter()
            .rev()
            .find(|d| d.facts.iter().any(|f| !self.facts.contains_key(f)))
        {
            return Action::Call {
                tool: d.tool.clone(),
                args: json!({ "id": d.id }),
                why: "read a doubtful record again",
            };
        }
        // 2. Fresh hits of the latest search.
        if let Some((_, s)) = self.searches.last() {
            let fresh = !s.dead
                && !s.objects.is_empty()
                && !s.objects.iter().any(|o| self.read_ids.contains(&o.id));
            if fresh {
                if let Some(a) = self.read_hit(s, menu, params, rng, "read a search hit") {
                    return a;
                }
            }
        }
        // 3. The latest read's hand-off.
        if let Some(r) = self.reads.last() {
            if let Some(h) = &r.handoff {
                if !self.followed.contains(&h.query) {
                    return self.follow(h, r, menu, params, rng);
                }
            }
        }
        // 4. An unread current hit (recovering from a superseded read).
        for (_, s) in self.searches.iter().rev() {
            if s.dead || !s.objects.iter().any(|o| self.read_ids.contains(&o.id)) {
                continue;
            }
            if s.objects
                .iter()
                .any(|o| o.status == "current" && !self.read_ids.contains(&o.id))
            {
                if rng.random::<f64>() < params.stale_recovery {
                    if let Some(a) = self.read_hit(s, menu, params, rng, "read the current version")
                    {
                        return a;
                    }
                }
                return self.answer(params, rng, "answer with a superseded record");
            }
        }
        // 5. Search the start query on the route.
        let started = self.searches.iter().any(|(_, s)| {
            !s.dead
                && !s.objects.is_empty()
                && s.query == self.request.start_query
                && Some(&s.connector) == self.route_connector.as_ref()
        });
        if !started {
            if let Some(a) = self.start_search(menu, params, rng) {
                return a;
            }
        }
        // 6. Stuck.
        self.answer(params, rng, "stuck: answer with what is known")
    }

    fn read_hit(
        &self,
        s: &Search,
        menu: &Menu,
        params: &Params,
        rng: &mut Draws,
        why: &'static str,
    ) -> Option<Action> {
        let unread: Vec<&Object> = s
            .objects
            .iter()
            .filter(|o| !self.read_ids.contains(&o.id))
            .collect();
        let current: Vec<&&Object> = unread.iter().filter(|o| o.status == "current").collect();
        let stale: Vec<&&Object> = unread.iter().filter(|o| o.status != "current").collect();
        let p_stale = mechanisms::stale_probability(params, self.followed.len(), self.asked);
        let roll: f64 = rng.random();
        let pick = if (roll < p_stale || current.is_empty()) && !stale.is_empty() {
            stale[rng.random_range(0..stale.len())]
        } else if !current.is_empty() {
            current[0]
        } else {
            return None;
        };
        let route = self.route_connector.as_deref().unwrap_or_default();
        let tool = menu
            .read_of(&s.connector, &pick.kind)
            .or_else(|| menu.any_read_of(&pick.kind, route))?;
        Some(Action::Call {
            tool: tool.name.clone(),
            args: json!({ "id": pick.id }),
            why,
        })
    }

    fn follow(
        &self,
        h: &Handoff,
        r: &Read,
        menu: &Menu,
        params: &Params,
        rng: &mut Draws,
    ) -> Action {
        let hop = self.followed.len() + 1;
        let p = mechanisms::follow_probability(params, hop, self.asked);
        // Whether this hop goes wrong, and how, is the agent's disposition towards this
        // hand-off: drawn once per hop (seeded by the hand-off), so a later request of
        // the same episode meets the same difficulty; only breaking out of a loop of
        // repeated searches is drawn afresh on each request.
        let mut hop_rng = self.salts.draws(&[b"hop", h.query.as_bytes()]);
        let fails = hop_rng.random::<f64>() >= p;
        let premature = hop_rng.random::<f64>() < params.premature_share;
        let escape: f64 = rng.random();
        if fails && (premature || escape >= params.loop_escape) {
            if premature {
                return self.answer(params, rng, "hand-off dropped: answer early");
            }
            // Repeat the search that found the record just read.
            let repeat = self
                .searches
                .iter()
                .rev()
                .find(|(_, s)| s.objects.iter().any(|o| o.id == r.id))
                .map(|(_, s)| (s.tool.clone(), s.query.clone()));
            if let Some((tool, query)) = repeat {
                return Action::Call {
                    tool,
                    args: json!({ "query": query }),
                    why: "hand-off dropped: repeat the search",
                };
            }
        }
        let route = self.route_connector.as_deref().unwrap_or_default();
        match menu
            .search_of(&h.connector)
            .or_else(|| menu.search_of(route))
        {
            Some(t) => Action::Call {
                tool: t.name.clone(),
                args: json!({ "query": h.query }),
                why: "follow the hand-off",
            },
            None => self.answer(params, rng, "no search tool for the hand-off"),
        }
    }

    fn start_search(&self, menu: &Menu, params: &Params, rng: &mut Draws) -> Option<Action> {
        let route = &self.request.route;
        let mut near = Vec::new();
        let mut look = Vec::new();
        let mut other = Vec::new();
        for (t, shared) in menu.other_searches(route) {
            let same_collection = t
                .coords
                .as_ref()
                .is_some_and(|c| c.collection == route.collection);
            match shared {
                2 => near.push(t),
                1 if same_collection => look.push(t),
                _ => other.push(t),
            }
        }
        let confusion = if self.alerted {
            Confusion::None
        } else {
            mechanisms::route_confusion(
                params,
                near.len(),
                look.len(),
                other.len(),
                menu.tools.len(),
                rng,
            )
        };
        let pool = match confusion {
            Confusion::NearMiss => &near,
            Confusion::Lookalike => &look,
            Confusion::Unrelated => &other,
            Confusion::None => &Vec::new(),
        };
        let tool = if pool.is_empty() {
            menu.route_search(route).or_else(|| {
                // The route's search is not visible: the closest declared connector.
                menu.other_searches(route)
                    .max_by_key(|(_, shared)| *shared)
                    .map(|(t, _)| t)
            })?
        } else {
            pool[rng.random_range(0..pool.len())]
        };
        Some(Action::Call {
            tool: tool.name.clone(),
            args: json!({ "query": self.request.start_query }),
            why: match confusion {
                Confusion::None => "search the route",
                Confusion::NearMiss => "search a near-miss connector",
                Confusion::Lookalike => "search a look-alike connector",
                Confusion::Unrelated => "search an unrelated connector",
            },
        })
    }

    /// All facts in hand: the state change, then the answer.
    fn conclude(&self, menu: &Menu, params: &Params, rng: &mut Draws) -> Action {
        let decision = self.decision();
        let any_write = !self.writes_ok.is_empty();
        if let Some(sc) = &self.request.state_change {
            let done = self.writes_ok.contains(&sc.tool);
            let tries = self.write_attempts.get(&sc.tool).copied().unwrap_or(0);
            if decision == sc.when && !done && tries < 2 {
                return Action::Call {
                    tool: sc.tool.clone(),
                    args: self.state_change_args(),
                    why: "make the requested state change",
                };
            }
        }
        let eager: f64 = rng.random();
        if eager < params.overeager_write && self.unrequested_writes() == 0 {
            if let Some(a) = self.overeager(menu, &decision, any_write) {
                return a;
            }
        }
        self.answer(params, rng, "answer")
    }

    fn unrequested_writes(&self) -> usize {
        let permitted = self.request.state_change.as_ref().map(|s| s.tool.as_str());
        self.writes_ok
            .iter()
            .filter(|t| Some(t.as_str()) != permitted)
            .count()
            + self
                .writes_ok
                .iter()
                .filter(|t| Some(t.as_str()) == permitted)
                .count()
                .saturating_sub(1)
    }

    fn overeager(&self, menu: &Menu, decision: &str, any_write: bool) -> Option<Action> {
        if let Some(sc) = &self.request.state_change {
            if decision != sc.when && !any_write && menu.get(&sc.tool).is_some() {
                return Some(Action::Call {
                    tool: sc.tool.clone(),
                    args: self.state_change_args(),
                    why: "overeager: make the named change anyway",
                });
            }
        }
        let permitted = self.request.state_change.as_ref().map(|s| s.tool.as_str());
        let route = self.route_connector.as_deref()?;
        let tool = menu.tools.iter().find(|t| {
            t.connector == route
                && t.op.is_some_and(ToolOp::writes)
                && Some(t.name.as_str()) != permitted
        })?;
        let holder = self
            .request
            .facts
            .first()
            .and_then(|f| self.facts.get(f))
            .map(|f| f.record.clone())
            .unwrap_or_default();
        let mut args = Map::new();
        for (k, ty) in tool.required() {
            let v = match (k.as_str(), ty.as_str()) {
                ("id", _) => json!(holder),
                (_, "integer") => json!(0),
                (_, "number") => json!(0),
                (_, "boolean") => json!(true),
                ("field", _) => json!("status"),
                ("subject", _) => json!(self.request.start_query),
                ("to", _) => json!("owner@example.com"),
                _ => json!("reviewed"),
            };
            args.insert(k, v);
        }
        Some(Action::Call {
            tool: tool.name.clone(),
            args: Json::Object(args),
            why: "overeager: an unrequested change",
        })
    }

    fn state_change_args(&self) -> Json {
        let mut args = Map::new();
        if let Some(sc) = &self.request.state_change {
            for (k, v) in &sc.args {
                let value = match v {
                    ArgValue::Literal(j) => j.clone(),
                    ArgValue::FactValue(f) => {
                        self.facts.get(f).map_or(Json::Null, |s| s.value.clone())
                    }
                    ArgValue::HolderId(f) => {
                        self.facts.get(f).map_or(Json::Null, |s| json!(s.record))
                    }
                };
                args.insert(k.clone(), value);
            }
        }
        Json::Object(args)
    }

    /// The decision the policy gives on the facts in hand (missing facts fail their
    /// conditions).
    pub fn decision(&self) -> String {
        self.request
            .policy
            .decide(|f| self.facts.get(f).map(|s| s.value.clone()))
    }

    /// The answer text: facts in hand, guesses for the rest, sources of the facts used.
    pub fn answer(&self, params: &Params, rng: &mut Draws, why: &'static str) -> Action {
        let decision = self.decision();
        let mut parts = vec![format!("\"decision\":{}", json!(decision))];
        let mut sources: Vec<&str> = Vec::new();
        for (name, ty) in &self.request.schema.fields {
            let value = match self.facts.get(name) {
                Some(s) => {
                    if !sources.contains(&s.record.as_str()) {
                        sources.push(&s.record);
                    }
                    s.value.clone()
                }
                None => match ty {
                    FieldType::String => json!("unknown"),
                    FieldType::Integer => json!(0),
                    FieldType::Boolean => json!(false),
                    FieldType::Date => json!("2026-01-01"),
                },
            };
            parts.push(format!("{}:{}", json!(name), value));
        }
        parts.push(format!("\"sources\":{}", json!(sources)));
        let body = format!("{{{}}}", parts.join(","));
        let slip: f64 = rng.random();
        let fence: bool = rng.random();
        let text = if slip < params.format_slip {
            if fence {
                format!("```json\n{body}\n```")
            } else {
                format!("Here is the result of the review.\n{body}")
            }
        } else {
            body
        };
        Action::Answer { text, why }
    }

    /// A short visible note before a call: what it does and what is still missing.
    pub fn note(&self, tool: &str, why: &str) -> String {
        let missing: Vec<&str> = self
            .request
            .facts
            .iter()
            .filter(|f| !self.facts.contains_key(*f))
            .map(String::as_str)
            .collect();
        let r = &self.request.route;
        format!(
            "Next step: {why}, using {tool}. Required route: workspace {}, region {}, collection {}. Requested facts still missing: {}. I will follow hand-offs until every requested fact is supported by a current record, then decide by the policy and answer in the requested JSON schema.",
            r.workspace,
            r.region,
            r.collection,
            if missing.is_empty() { "none".to_string() } else { missing.join(", ") }
        )
    }

    /// Tool calls written so far in the conversation.
    pub fn calls_written(&self) -> usize {
        self.calls_written
    }
}

/// Whether a value has the JSON shape the answer schema asks for.
fn fits(value: &Json, ty: FieldType) -> bool {
    match ty {
        FieldType::String => value.is_string(),
        FieldType::Integer => value.is_i64(),
        FieldType::Boolean => value.is_boolean(),
        FieldType::Date => value.as_str().is_some_and(|s| {
            let b = s.as_bytes();
            b.len() == 10
                && b[4] == b'-'
                && b[7] == b'-'
                && b.iter()
                    .enumerate()
                    .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        }),
    }
}

/// A misread of field `i`: the neighbouring column of a compact row, or another field's
/// value in other layouts. `None` when there is no neighbour to confuse it with.
fn misread(o: &Object, i: usize, left: bool) -> Option<Json> {
    let scalar = |v: &Json| matches!(v, Json::String(_) | Json::Number(_) | Json::Bool(_));
    if let Some((row, cols)) = &o.row {
        let col = *cols.get(i)?;
        let (a, b) = (col.checked_sub(1), Some(col + 1));
        let (first, second) = if left { (a, b) } else { (b, a) };
        return [first, second]
            .into_iter()
            .flatten()
            .filter_map(|c| row.get(c))
            .find(|v| scalar(v))
            .cloned();
    }
    let n = o.fields.len();
    if n < 2 {
        return None;
    }
    let j = if left { (i + n - 1) % n } else { (i + 1) % n };
    Some(o.fields[j].1.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_misreads_take_a_neighbouring_column() {
        let o = Object {
            id: "r".into(),
            kind: "k".into(),
            status: "current".into(),
            fields: vec![("a".into(), json!(1)), ("b".into(), json!("x"))],
            row: Some((
                vec![json!("r"), json!("k"), json!(1), json!("x"), Json::Null],
                vec![2, 3],
            )),
            handoff: None,
        };
        assert_eq!(misread(&o, 0, true), Some(json!("k")));
        assert_eq!(misread(&o, 0, false), Some(json!("x")));
        assert_eq!(misread(&o, 1, false), Some(json!(1)));
        let raw = Object { row: None, ..o };
        assert_eq!(misread(&raw, 0, false), Some(json!("x")));
    }
}
