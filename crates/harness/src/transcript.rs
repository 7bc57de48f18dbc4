//! Content-addressed transcripts: every request and response of an episode, stored so
//! that nothing large is repeated.
//!
//! System prompts and tool menus go into a [`BlobStore`] once, by blake3 hash (a
//! 128-schema menu is ~60 KiB and is shared by every request and every episode that
//! shows it). A request is stored as references to its system prompt and menu plus the
//! messages appended since the previous request; a response is stored whole, raw body
//! included. [`Transcript::rebuild`] gives back the exact request, byte for byte in its
//! canonical JSON, from which each wire client's body is a pure function.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use tbb_core::compile::{Encoding, Variant};
use tbb_core::grade::trace::{
    ExecutedCall, InfraFailure, Issuer, Limits, RequestRecord, StopReason, Trace, Turn,
    TRACE_FORMAT,
};
use tbb_core::sandbox::Sandbox;
use tbb_provider::chat::Sampling;
use tbb_provider::menu_memo::{Memoised, MenuMemo};
use tbb_provider::{ChatRequest, ChatResponse, Message, ToolSchema};

/// The format tag of stored transcripts.
pub const TRANSCRIPT_FORMAT: &str = "tbb-transcript/1";

/// Texts stored once by content hash.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobStore {
    /// Hash reference -> text.
    pub blobs: BTreeMap<String, String>,
}

/// The reference of a text: `b3:` and the first 32 hex digits of its blake3 hash.
pub fn blob_ref(text: &str) -> String {
    format!("b3:{}", &blake3::hash(text.as_bytes()).to_hex()[..32])
}

impl BlobStore {
    /// Stores a text (once) and returns its reference.
    pub fn put(&mut self, text: &str) -> String {
        let r = blob_ref(text);
        self.blobs
            .entry(r.clone())
            .or_insert_with(|| text.to_string());
        r
    }

    /// The text of a reference.
    pub fn get(&self, r: &str) -> Option<&str> {
        self.blobs.get(r).map(String::as_str)
    }

    /// Adds every blob of another store.
    pub fn extend(&mut self, other: &BlobStore) {
        for (k, v) in &other.blobs {
            self.blobs.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// A request as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRequest {
    /// Model.
    pub model: String,
    /// Blob of the system prompt.
    pub system_ref: String,
    /// Blob of the tool list (JSON array of schemas).
    pub tools_ref: String,
    /// Messages after those of the previous request (after the system prompt for the
    /// first).
    pub appended: Vec<Message>,
    /// Completion cap.
    pub max_completion_tokens: u32,
    /// Sampling as sent.
    pub sampling: Sampling,
}

/// What came back for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoredOutcome {
    /// A response, whole.
    Response(ChatResponse),
    /// No response after the retry policy (the error, never containing a key).
    Failed {
        /// The error.
        error: String,
        /// Attempts made.
        attempts: u32,
    },
}

/// Puts a tool list into the blob store and returns its reference.
pub fn put_tools(tools: &[ToolSchema], blobs: &mut BlobStore) -> String {
    let stored = stored_menu(tools);
    let (r, text) = &stored.1;
    blobs.blobs.entry(r.clone()).or_insert_with(|| text.clone());
    r.clone()
}

/// The blob of a tool list (its reference and text), serialised and hashed once per
/// process for the menus in use: every episode of a variant shows the same menu, and
/// serialising and hashing 128 schemas again for each was a tenth of a live request's
/// CPU. Menus are found by content ([`MenuMemo`]), so the blob is exactly the one
/// serialising `tools` gives.
fn stored_menu(tools: &[ToolSchema]) -> Memoised<(String, String)> {
    static MENUS: MenuMemo<(String, String)> = MenuMemo::new();
    MENUS.get(tools, |tools| {
        let text = serde_json::to_string(tools).unwrap_or_default();
        let r = blob_ref(&text);
        remember_count(&r, text.len(), tools.len());
        (r, text)
    })
}

/// Schema counts by tool-list reference, with the length of the text counted, for
/// every list this process stored or read. A reference is its text's hash, so its count
/// never changes: one map serves every episode, and a 128-schema list (~60 KiB) is
/// parsed at most once per process rather than once per episode that shows it.
static SCHEMA_COUNTS: Mutex<Option<HashMap<String, (usize, u32)>>> = Mutex::new(None);

fn remember_count(tools_ref: &str, text_len: usize, n: usize) {
    let mut counts = SCHEMA_COUNTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    counts.get_or_insert_with(HashMap::new).insert(
        tools_ref.to_string(),
        (text_len, u32::try_from(n).unwrap_or(u32::MAX)),
    );
}

/// The number of schemas in the stored tool list `tools_ref`: 0 when `blobs` lacks it
/// or it is not a JSON array (a corrupt cache entry shows no schemas rather than
/// stopping a publish; `tbb certify` is what fails such a transcript). A blob whose
/// text is not the one its reference names (a corrupt cache) is counted again unless
/// it has the same length as that text.
pub fn schema_count(tools_ref: &str, blobs: &BlobStore) -> u32 {
    let Some(text) = blobs.get(tools_ref) else {
        return 0;
    };
    {
        // A poisoned lock only means a panic elsewhere mid-insert; entries are facts.
        let counts = SCHEMA_COUNTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&(len, n)) = counts.as_ref().and_then(|c| c.get(tools_ref)) {
            if len == text.len() {
                return n;
            }
        }
    }
    let n = serde_json::from_str::<Vec<serde::de::IgnoredAny>>(text).map_or(0, |t| t.len());
    remember_count(tools_ref, text.len(), n);
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Every request and response of an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Always [`TRANSCRIPT_FORMAT`].
    pub format: String,
    /// The episode's content key.
    pub episode_key: String,
    /// Requests in order.
    pub requests: Vec<StoredRequest>,
    /// One outcome per request.
    pub outcomes: Vec<StoredOutcome>,
    /// Wall time of each request in milliseconds (never part of a result's identity).
    #[serde(default)]
    pub wall_ms: Vec<u64>,
    /// Provider attempts of each request, retries included (one per request, beside
    /// `wall_ms`); empty in transcripts recorded before attempts were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<u32>,
    /// Messages after the last request (the observation of a call executed just before
    /// the episode stopped).
    #[serde(default)]
    pub trailing: Vec<Message>,
    /// Why the episode stopped.
    #[serde(default)]
    pub stop: Option<StopReason>,
    /// The limits in force.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// The body reference of the last request recorded (chained into the next).
    #[serde(default)]
    pub last_ref: String,
    /// The sampling fields the first request's wire body carried, read back from the
    /// body the client built ([`tbb_provider::Provider::wire_sampling`]); `None`
    /// when no request was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_sampling: Option<Sampling>,
    /// What failed, when the infrastructure ended the episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra: Option<InfraFailure>,
    /// The tool names offered at the first request when the arm's menu chose them
    /// from the variant's (the router, the retrieval menu): what availability is
    /// graded against. `None` when the whole menu was offered, so the transcripts of
    /// the other arms are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<Vec<String>>,
    /// The ids of the calls the public-handoff controller issued (their assistant
    /// messages are the controller's, not a response's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controller_calls: Vec<String>,
    /// Why the controller halted, when it ended the episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_halt: Option<String>,
    /// The encoding records were delivered in when it was not the cell's (canonical
    /// delivery): the tool messages hold that text, and [`Transcript::trace`] gives
    /// back the sandbox's own observation for each, after checking the delivered one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_in: Option<Encoding>,
}

impl Transcript {
    /// An empty transcript.
    pub fn new(episode_key: &str) -> Transcript {
        Transcript {
            format: TRANSCRIPT_FORMAT.into(),
            episode_key: episode_key.into(),
            requests: Vec::new(),
            outcomes: Vec::new(),
            wall_ms: Vec::new(),
            attempts: Vec::new(),
            trailing: Vec::new(),
            stop: None,
            limits: None,
            last_ref: String::new(),
            wire_sampling: None,
            infra: None,
            offered: None,
            controller_calls: Vec::new(),
            controller_halt: None,
            delivered_in: None,
        }
    }

    /// Stores `request`, the next request of the episode, as a delta from the previous,
    /// and returns its body reference. `tools_ref` is the blob of `request.tools`, put
    /// once per menu by the caller (see [`put_tools`]) so a 128-schema menu is not
    /// serialised again for every request.
    ///
    /// The body reference chains: blake3 of the previous request's reference and this
    /// stored request. It identifies the exact request (which [`Transcript::rebuild`]
    /// restores) without serialising the whole body at every turn.
    pub fn record_request(
        &mut self,
        request: &ChatRequest,
        tools_ref: &str,
        blobs: &mut BlobStore,
    ) -> String {
        let (system, rest) = match request.messages.split_first() {
            Some((Message::System { content }, rest)) => (content.as_str(), rest),
            _ => ("", request.messages.as_slice()),
        };
        let already: usize = self.requests.iter().map(|r| r.appended.len()).sum();
        // The system prompt rarely changes within an episode: compare it with the last
        // request's (a memcmp) before hashing it again.
        let system_ref = match self.requests.last() {
            Some(last) if blobs.get(&last.system_ref) == Some(system) => last.system_ref.clone(),
            _ => blobs.put(system),
        };
        let stored = StoredRequest {
            model: request.model.clone(),
            system_ref,
            tools_ref: tools_ref.to_string(),
            appended: rest.get(already..).unwrap_or_default().to_vec(),
            max_completion_tokens: request.max_completion_tokens,
            sampling: request.sampling,
        };
        let mut h = blake3::Hasher::new();
        h.update(self.last_ref.as_bytes());
        h.update(
            serde_json::to_string(&stored)
                .unwrap_or_default()
                .as_bytes(),
        );
        self.last_ref = format!("b3:{}", &h.finalize().to_hex()[..32]);
        self.requests.push(stored);
        self.last_ref.clone()
    }

    /// Closes the transcript: the messages after the last recorded request, the stop
    /// reason and the limits.
    pub fn close(&mut self, messages: &[Message], stop: StopReason, limits: Limits) {
        let recorded = 1 + self
            .requests
            .iter()
            .map(|r| r.appended.len())
            .sum::<usize>();
        self.trailing = messages.get(recorded..).unwrap_or_default().to_vec();
        self.stop = Some(stop);
        self.limits = Some(limits);
    }

    /// Rebuilds the episode's trace from the stored requests and responses, so that a
    /// verdict can be re-derived offline. `None` if the transcript is incomplete.
    pub fn trace(&self, blobs: &BlobStore, variant: &Variant) -> Option<Trace> {
        let refs = self.body_refs();
        // Most requests of an episode share one menu blob: its names are read once.
        let mut names: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut turns: Vec<Turn> = Vec::new();
        for (i, (request, outcome)) in self.requests.iter().zip(&self.outcomes).enumerate() {
            // Calls executed after response i-1 arrive as tool messages in request i.
            attach_executed(turns.last_mut(), &request.appended, &self.controller_calls);
            let StoredOutcome::Response(response) = outcome else {
                continue;
            };
            let visible_tools = match names.get(request.tools_ref.as_str()) {
                Some(n) => n.clone(),
                None => {
                    let n = tool_names(blobs.get(&request.tools_ref)?)?;
                    names.insert(&request.tools_ref, n.clone());
                    n
                }
            };
            turns.push(Turn {
                request: RequestRecord {
                    visible_tools,
                    body_ref: refs.get(i).cloned(),
                },
                response: super::response_record(
                    response,
                    self.wall_ms.get(i).copied().unwrap_or(0),
                ),
                executed: Vec::new(),
            });
        }
        attach_executed(turns.last_mut(), &self.trailing, &self.controller_calls);
        if let Some(d) = self.delivered_in {
            undeliver(&mut turns, variant, d);
        }
        let stop = self.stop?;
        let final_answer = match stop {
            StopReason::Answer => turns.last().and_then(|t| t.response.text.clone()),
            _ => None,
        };
        Some(Trace {
            format: TRACE_FORMAT.into(),
            family: variant.family.clone(),
            cell: variant.cell,
            variant_id: variant.variant_id.clone(),
            menu: self.offered.clone().unwrap_or_else(|| variant.menu_names()),
            limits: self.limits?,
            turns,
            final_answer,
            stop,
            infra: self.infra.clone(),
        })
    }

    /// The body references of every request, recomputed from the stored requests.
    pub fn body_refs(&self) -> Vec<String> {
        let mut last = String::new();
        self.requests
            .iter()
            .map(|stored| {
                let mut h = blake3::Hasher::new();
                h.update(last.as_bytes());
                h.update(serde_json::to_string(stored).unwrap_or_default().as_bytes());
                last = format!("b3:{}", &h.finalize().to_hex()[..32]);
                last.clone()
            })
            .collect()
    }

    /// Rebuilds request `index` exactly; `None` if a blob is missing or malformed.
    pub fn rebuild(&self, index: usize, blobs: &BlobStore) -> Option<ChatRequest> {
        let stored = self.requests.get(index)?;
        let system = blobs.get(&stored.system_ref)?;
        let tools: Vec<ToolSchema> = serde_json::from_str(blobs.get(&stored.tools_ref)?).ok()?;
        let mut messages = Vec::new();
        if !system.is_empty() {
            messages.push(Message::System {
                content: system.to_string(),
            });
        }
        for r in &self.requests[..=index] {
            messages.extend(r.appended.iter().cloned());
        }
        Some(ChatRequest {
            model: stored.model.clone(),
            messages,
            tools,
            max_completion_tokens: stored.max_completion_tokens,
            sampling: stored.sampling,
        })
    }
}

/// The names of a stored tool list, which must parse as a list of [`ToolSchema`]s.
/// Only the names are kept: the descriptions are checked to be strings and the
/// parameters to be JSON without building them (building 128 schemas' values to read
/// 128 names was most of a trace's rebuild).
fn tool_names(blob: &str) -> Option<Vec<String>> {
    /// A [`ToolSchema`] as the list stores it, its parameters skipped.
    #[derive(Deserialize)]
    struct Named {
        name: String,
        #[allow(dead_code)]
        description: String,
        #[allow(dead_code)]
        parameters: serde::de::IgnoredAny,
    }
    let tools: Vec<Named> = serde_json::from_str(blob).ok()?;
    Some(tools.into_iter().map(|t| t.name).collect())
}

/// Replaces each delivered text among the executed calls by the sandbox's own
/// observation, replaying the calls in order in a sandbox delivering in `d`. A text
/// the sandbox would not have delivered is left as it is, so the grader's replay
/// flags it.
fn undeliver(turns: &mut [Turn], variant: &Variant, d: Encoding) {
    let mut sandbox = Sandbox::new(variant).delivering(d);
    for call in turns.iter_mut().flat_map(|t| t.executed.iter_mut()) {
        let outcome = sandbox.execute(&call.tool, &call.arguments);
        if outcome.delivered.as_ref().unwrap_or(&outcome.observation) == &call.observation {
            call.observation = outcome.observation;
        }
    }
}

/// Adds the tool messages among `messages` to `turn` as executed calls, with the
/// argument strings the turn's response gave for those call ids; a call among
/// `controller_calls` is the controller's, its arguments those of the assistant
/// message that carried it.
fn attach_executed(turn: Option<&mut Turn>, messages: &[Message], controller_calls: &[String]) {
    let Some(turn) = turn else { return };
    for m in messages {
        if let Message::Tool {
            call_id,
            name,
            content,
        } = m
        {
            let by_controller = controller_calls.contains(call_id);
            let arguments = if by_controller {
                messages
                    .iter()
                    .find_map(|m| match m {
                        Message::Assistant { tool_calls, .. } => {
                            tool_calls.iter().find(|c| &c.id == call_id)
                        }
                        _ => None,
                    })
                    .map(|c| c.arguments.clone())
            } else {
                turn.response
                    .tool_calls
                    .iter()
                    .find(|c| &c.id == call_id)
                    .map(|c| c.arguments.clone())
            };
            turn.executed.push(ExecutedCall {
                call_id: call_id.clone(),
                by: if by_controller {
                    Issuer::Controller
                } else {
                    Issuer::Model
                },
                tool: name.clone(),
                arguments: arguments.unwrap_or_default(),
                observation: content.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_list_is_counted_only_where_its_blob_is() {
        let tools: Vec<ToolSchema> = ["a_one", "a_two", "a_three"]
            .into_iter()
            .map(|name| ToolSchema {
                name: name.into(),
                description: format!("The count test's {name}."),
                parameters: serde_json::json!({"type": "object"}).into(),
            })
            .collect();
        let mut blobs = BlobStore::default();
        let r = put_tools(&tools, &mut blobs);
        assert_eq!(schema_count(&r, &blobs), 3);
        // Known to the process, but not in this store: a transcript without its blob
        // shows no schemas, as it did before the count was remembered.
        assert_eq!(schema_count(&r, &BlobStore::default()), 0);
        // Read from a store, never stored here: parsed, then remembered.
        let mut other = BlobStore::default();
        let read = other.put("[{\"name\":\"x\"},{\"name\":\"y\"}]");
        assert_eq!(schema_count(&read, &other), 2);
        assert_eq!(schema_count(&read, &other), 2);
        let broken = other.put("not json");
        assert_eq!(schema_count(&broken, &other), 0);
        // A corrupt store: a known reference whose text is not the one it names.
        let mut corrupt = BlobStore::default();
        corrupt.blobs.insert(r.clone(), "[]".to_string());
        assert_eq!(schema_count(&r, &corrupt), 0);
    }

    #[test]
    fn a_menu_is_stored_as_serialising_it_gives_whether_or_not_seen_before() {
        let menu = |d: &str| {
            vec![ToolSchema {
                name: "a_search".into(),
                description: d.into(),
                parameters: serde_json::json!({"type": "object"}).into(),
            }]
        };
        for d in ["one", "two", "one"] {
            let mut blobs = BlobStore::default();
            let r = put_tools(&menu(d), &mut blobs);
            let text = serde_json::to_string(&menu(d)).unwrap_or_default();
            assert_eq!(r, blob_ref(&text));
            assert_eq!(blobs.get(&r), Some(text.as_str()));
            assert_eq!(blobs.blobs.len(), 1);
        }
    }

    #[test]
    fn tool_names_reads_the_names_of_exactly_the_lists_a_full_parse_accepts() {
        let tools = vec![
            ToolSchema {
                name: "a_search".into(),
                description: "Search.".into(),
                parameters:
                    serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}})
                        .into(),
            },
            ToolSchema {
                name: "a_read".into(),
                description: "Read.".into(),
                parameters: serde_json::json!(true).into(),
            },
        ];
        let blob = serde_json::to_string(&tools).unwrap_or_default();
        assert_eq!(
            tool_names(&blob),
            Some(vec!["a_search".to_string(), "a_read".to_string()])
        );
        for bad in [
            r#"[{"name": "a", "description": "d"}]"#,
            r#"[{"name": "a", "description": 7, "parameters": {}}]"#,
            r#"[{"description": "d", "parameters": {}}]"#,
            r#"{"name": "a"}"#,
            "[",
        ] {
            assert_eq!(
                tool_names(bad).is_some(),
                serde_json::from_str::<Vec<ToolSchema>>(bad).is_ok(),
                "{bad}"
            );
            assert_eq!(tool_names(bad), None, "{bad}");
        }
    }
}
