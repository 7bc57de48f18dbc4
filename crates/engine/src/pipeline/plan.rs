//! Plans: the DAG compared with the cache — what runs, what is reused, and why.
//!
//! Every node gets an [`Action`] with its reasons: `+` new, `~` changed (the diff of
//! its cached and current key inputs), `!` incomplete (a recorded result whose output
//! is missing, or whose stored row apply would read but cannot: "stored row
//! unreadable: …", [`super::rows`]), `=` cached, and `-` for cached identities the
//! manifest no longer has (kept). A new node whose identity differs from an orphan's in exactly one field
//! (`cap=1024` -> `cap=4096`) is shown as that orphan changed, so a changed completion
//! cap reads "completion_cap 1024 -> 4096" rather than as one node added and one gone.
//!
//! Never: writes anything. Planning reads the cache index, the small stored rows (and
//! the transcripts apply will read), the footers of the published tables, and compiles only variants it has never compiled (for the
//! request estimate).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use petgraph::graph::NodeIndex;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::cache::{Cache, CacheError, Entry};
use super::cache_index::Digest;
use super::dag::{Dag, Publish, Work};
use super::identity::Fields;
use super::key::{diff, NodeKind, Reason};
use super::rows;
use tbb_report::format::count;

/// What happens to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Never run: runs.
    Create,
    /// Ran with another key: reruns.
    Update,
    /// Its result is incomplete: reruns.
    Incomplete,
    /// Reused.
    Cached,
    /// In the cache, not in the manifest: kept, not run.
    Orphan,
}

impl Action {
    /// The plan's marker.
    pub fn sign(self) -> char {
        match self {
            Action::Create => '+',
            Action::Update => '~',
            Action::Incomplete => '!',
            Action::Cached => '=',
            Action::Orphan => '-',
        }
    }

    /// Whether the node runs.
    pub fn runs(self) -> bool {
        matches!(self, Action::Create | Action::Update | Action::Incomplete)
    }
}

/// One node of the plan. Serialised with `why` (its reasons as the plan prints them)
/// after `reasons`; `why` is made when the plan is written, not held per node (a
/// fresh study plans one reason per node), and ignored when a saved plan is read.
#[derive(Debug, Clone, Deserialize)]
pub struct Planned {
    /// Kind.
    pub kind: NodeKind,
    /// Identity, for an orphan or a node of a saved plan; `None` for a node of the DAG
    /// the plan was made from, whose DAG node makes it when asked ([`Plan::id_of`]):
    /// held for every node, a plan would keep what the DAG no longer does
    /// ([`super::dag::Node::id`]).
    pub id: Option<Arc<str>>,
    /// Key (the cached one for orphans).
    pub key: Arc<str>,
    /// What happens.
    pub action: Action,
    /// Why: shared by the nodes planned for the same reasons (a fresh study of
    /// 145,000 nodes has one list, not one each).
    pub reasons: Arc<[Reason]>,
    /// Its DAG node (none for orphans).
    #[serde(skip)]
    pub node: Option<NodeIndex>,
}

impl Serialize for Planned {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Written<'a> {
            kind: NodeKind,
            id: &'a str,
            key: &'a str,
            action: Action,
            reasons: &'a [Reason],
            why: Vec<String>,
        }
        let Some(id) = self.id.as_deref() else {
            return Err(serde::ser::Error::custom(
                "a planned node without its identity: name the plan's nodes before writing it",
            ));
        };
        Written {
            kind: self.kind,
            id,
            key: &self.key,
            action: self.action,
            reasons: &self.reasons,
            why: self.reasons.iter().map(ToString::to_string).collect(),
        }
        .serialize(serializer)
    }
}

/// The expected provider traffic of the execute nodes that run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Estimate {
    /// Provider requests.
    pub requests: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost at the configured prices.
    pub cost_usd: f64,
    /// Of `cost_usd`, the simulated configurations' requests: priced as their models
    /// list, and paid by no one (the simulated panel runs on this machine).
    #[serde(default)]
    pub simulated_cost_usd: f64,
    /// Of `requests`, those to simulated configurations.
    #[serde(default)]
    pub simulated_requests: u64,
    /// Of `requests`, those to configurations with no listed prices (made by `--model`
    /// alone): `cost_usd` holds nothing of them, and their cost is unknown, not zero.
    #[serde(default)]
    pub unpriced_requests: u64,
}

impl Estimate {
    /// Tokens one exchange (a response and what comes back) adds to the next prompt.
    pub const EXCHANGE_TOKENS: u64 = 150;
    /// Tokens of a response: the paper's median.
    pub const RESPONSE_TOKENS: u64 = 152;

    /// The requests, prompt and completion tokens of a conversation of `requests`
    /// requests whose first prompt is `base` tokens, each later one an exchange longer,
    /// each answered by a response of the median size: what [`Estimate::add`] counts.
    pub fn conversation(base: u64, requests: u64) -> (u64, u64, u64) {
        let prompt = (0..requests)
            .map(|i| base + i * Self::EXCHANGE_TOKENS)
            .sum();
        (requests, prompt, requests * Self::RESPONSE_TOKENS)
    }

    /// Counts `requests` to `config` of `prompt` and `completion` tokens in all, at its
    /// listed prices (`unlisted`: the configurations a `--model` flag made, which have
    /// none).
    pub fn add(
        &mut self,
        config: &tbb_provider::Configuration,
        (requests, prompt, completion): (u64, u64, u64),
        unlisted: &[String],
    ) {
        self.requests += requests;
        self.prompt_tokens += prompt;
        self.completion_tokens += completion;
        let cost = config.prices.cost_usd(prompt, completion);
        self.cost_usd += cost;
        if config.wall_time_is_modelled() {
            self.simulated_requests += requests;
            self.simulated_cost_usd += cost;
        }
        if unlisted.contains(&config.name) {
            self.unpriced_requests += requests;
        }
    }
}

/// A plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Format tag of saved plans.
    pub format: String,
    /// The manifest file.
    pub manifest: String,
    /// The `--set` overrides it was loaded with.
    pub overrides: Vec<(String, String)>,
    /// The `--model` configurations it was loaded with, each with its flag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<(String, tbb_provider::Configuration)>,
    /// Whether the key of each live configuration with episodes to run is set (the
    /// environment of the plan; `tbb apply` refuses while one is missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<KeyLine>,
    /// The manifest's content hash.
    pub manifest_hash: String,
    /// The lockfile hash the run would write.
    pub lockfile_hash: String,
    /// Every node, in DAG order, then the orphans.
    pub nodes: Vec<Planned>,
    /// Expected provider traffic.
    pub estimate: Estimate,
    /// blake3 over every node's identity, key and action: two plans with the same
    /// fingerprint do the same work.
    pub fingerprint: String,
    /// Analyses the manifest asks for that cannot run on its design (no node is
    /// planned for them), each as `(analysis, why)`.
    #[serde(default)]
    pub skipped_analyses: Vec<(String, String)>,
    /// `(analysis, comparison)`: the units each comparison of an analysis uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<(String, String)>,
    /// `(analysis, problem)` of the analyses that would fail on the other studies'
    /// tables they read (apply refuses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<(String, String)>,
    /// Tables the analyses read from other studies: their hash, pin, and whether
    /// they are missing or stale (apply refuses then).
    #[serde(default)]
    pub upstream: Vec<super::upstream::Status>,
    /// The configuration catalogue the manifest read.
    #[serde(default)]
    pub catalogue: String,
    /// Requests that will not fit a configuration's `context_window`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<super::context::ContextWarning>,
    /// The configurations with episodes to run that a `--model` flag made and the
    /// catalogue does not list: no prices, no `context_window`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unlisted: Vec<Unlisted>,
}

/// A configuration with episodes to run that a `--model` flag made and the catalogue
/// does not list. It has no listed prices, so what its requests cost is unknown (not
/// $0), and no `context_window`, so its prompts are not checked against the served
/// model's context ([`super::context`]); a catalogue entry of its name on its route
/// gives both, and the flag then runs that entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unlisted {
    /// The configuration.
    pub configuration: String,
    /// The flag that made it (`openai/x`).
    pub flag: String,
    /// Its route.
    pub route: String,
}

impl Unlisted {
    /// The lines the plan prints, `catalogue` being the catalogue the manifest read.
    pub fn lines(&self, catalogue: &str) -> [String; 3] {
        let Unlisted {
            configuration,
            flag,
            route,
        } = self;
        [
            format!(
                "! {configuration} (--model {flag}, {route}) has no listed prices: what its \
                 requests cost is unknown, not $0"
            ),
            format!(
                "! {configuration} has no context_window: its prompts are not checked \
                 against the served model's context"
            ),
            format!(
                "  to set them, add an entry named `{configuration}` on the same route, with \
                 `prices` and `context_window`, to {catalogue}: --model {flag} then runs that \
                 entry (docs/local-models.md)"
            ),
        ]
    }
}

/// Whether a live configuration's key is set, as the plan says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLine {
    /// The configuration.
    pub configuration: String,
    /// Its route.
    pub route: String,
    /// Whether its key is set, and in which variable.
    pub status: tbb_provider::KeyStatus,
}

impl KeyLine {
    /// The line the plan prints.
    pub fn line(&self) -> String {
        let what = format!("configuration `{}` ({})", self.configuration, self.route);
        match &self.status {
            tbb_provider::KeyStatus::NotNeeded => format!("key: {what} needs none"),
            tbb_provider::KeyStatus::Set { variable } => {
                format!("key: {what}: {variable} is set")
            }
            tbb_provider::KeyStatus::Missing { variable } => format!(
                "key: {what}: {variable} is not set; `tbb apply` refuses until it is (export {variable}=…)"
            ),
        }
    }
}

impl Estimate {
    /// What the requests are and what they cost: at the listed prices, nothing for the
    /// simulated panel (with what its models list), and an unknown cost for the
    /// configurations with no listed prices — said apart, so that a total never passes
    /// an unknown cost off as $0.
    pub fn text(&self) -> String {
        if self.requests == 0 {
            return "no provider requests".to_string();
        }
        let simulated = self.simulated_requests.min(self.requests);
        let live = self.requests - simulated;
        let unpriced = self.unpriced_requests.min(live);
        let priced = live - unpriced;
        let cost = self.cost_usd - self.simulated_cost_usd;
        let live_text = match (priced, unpriced) {
            (_, 0) => format!(
                "≈{} provider requests, ≈${cost:.2} at the listed prices",
                count(live)
            ),
            (0, _) => format!(
                "≈{} provider requests of unknown cost (no listed prices)",
                count(live)
            ),
            _ => format!(
                "≈{} provider requests, ≈${cost:.2} at the listed prices for ≈{} of them and \
                 an unknown cost for the ≈{} with no listed prices",
                count(live),
                count(priced),
                count(unpriced)
            ),
        };
        match (live, simulated) {
            (_, 0) => live_text,
            (0, _) => format!(
                "≈{} requests to the simulated panel, which cost nothing (≈${:.2} at its \
                 models' listed prices)",
                count(simulated),
                self.simulated_cost_usd
            ),
            _ => format!(
                "{live_text}, and ≈{} to the simulated panel, which cost nothing (≈${:.2} at \
                 its models' listed prices)",
                count(simulated),
                self.simulated_cost_usd
            ),
        }
    }
}

/// The format tag of saved plans.
pub const PLAN_FORMAT: &str = "tbb-plan/1";

/// Compares `dag` with `cache` and the published tables under `outputs`. The study's
/// fields, the estimate and the fingerprint are [`super::Study::plan`]'s to fill in.
pub fn plan(dag: &Dag, cache: &Cache, outputs: &Path) -> Result<Plan, CacheError> {
    // FxHash: the digests are uniform already (SipHash over 36,000 identities was a
    // tenth of a cached plan). A fresh study's plan makes no identity: with nothing
    // cached, no node has an earlier entry and nothing is orphaned.
    let cached_any = cache.has_nodes();
    let in_dag: FxHashSet<Digest> = if cached_any {
        dag.nodes().map(|(_, n)| Digest::of(&n.id())).collect()
    } else {
        FxHashSet::default()
    };
    let orphans: Vec<&Entry> = cache
        .latest_entries()
        .into_iter()
        .filter(|e| !in_dag.contains(&e.id))
        .collect();
    let orphan_texts = cache.texts(&orphans)?;
    // Orphans by identity with one field wildcarded, for pairing.
    let mut wildcard: FxHashMap<String, usize> = FxHashMap::default();
    for (i, e) in orphan_texts.iter().enumerate() {
        if let Some((kind, fields)) = parse_identity(&e.id) {
            for w in 0..fields.len() {
                wildcard
                    .entry(wildcarded(kind, fields.iter().map(|(k, v)| (k, v)), w))
                    .or_insert(i);
            }
        }
    }
    let mut paired = vec![false; orphans.len()];
    let mut known: Option<HashSet<(NodeKind, String, String)>> = None;
    let objects = |h: &str| cache.object(h).or_else(|| dag.objects.get(h).cloned());
    let table_payloads = table_payloads(dag, cache);

    let mut nodes = Vec::with_capacity(dag.graph.node_count() + orphans.len());
    let mut last_reasons: Option<Arc<[Reason]>> = None;
    for (index, node) in dag.nodes() {
        let (action, reasons) = match cache.get(&node.key) {
            Some(_) if node.kind == NodeKind::Table => {
                let payload = table_payloads.get(&*node.key);
                match payload.and_then(|p| rows::unreadable(NodeKind::Table, p)) {
                    Some(detail) => (Action::Incomplete, vec![Reason::RowUnreadable { detail }]),
                    None => match super::publish::problem(outputs, &node.key, payload) {
                        None => (Action::Cached, vec![]),
                        Some(detail) => (Action::Incomplete, vec![Reason::Incomplete { detail }]),
                    },
                }
            }
            Some(_) => (Action::Cached, vec![]),
            None => match cached_any
                .then(|| cache.latest(&node.id()))
                .flatten()
                .map(|e| cache.key_input(e))
                .transpose()?
                .flatten()
            {
                Some(old) => (
                    Action::Update,
                    diff(&old, &dag.key_input(index).full(), &objects),
                ),
                None => {
                    // With no orphans there is nothing to pair with (and building a
                    // node's wildcarded identities was most of planning a fresh study).
                    let pair = (!wildcard.is_empty())
                        .then(|| {
                            (0..node.fields.len())
                                .filter_map(|w| {
                                    wildcard.get(&wildcarded(node.kind, node.fields.iter(), w))
                                })
                                .copied()
                                .find(|&i| !paired[i])
                        })
                        .flatten();
                    let old = match pair {
                        Some(i) => cache.key_input(orphans[i])?.map(|old| (i, old)),
                        None => None,
                    };
                    match old {
                        Some((i, old)) => {
                            paired[i] = true;
                            let mut reasons = diff(&old, &dag.key_input(index).full(), &objects);
                            if reasons.is_empty() {
                                reasons.push(Reason::UpstreamChanged);
                            }
                            (Action::Update, reasons)
                        }
                        None => {
                            let known = match &mut known {
                                Some(known) => known,
                                None => known.insert(known_values(cache)?),
                            };
                            (
                                Action::Create,
                                vec![Reason::New {
                                    what: new_what(node.kind, &node.fields, known),
                                }],
                            )
                        }
                    }
                }
            },
        };
        let reasons = if action == Action::Update && reasons.is_empty() {
            vec![Reason::UpstreamChanged]
        } else {
            reasons
        };
        // Nodes next to each other mostly run for the same reasons.
        let reasons = match &last_reasons {
            Some(last) if **last == *reasons => last.clone(),
            _ => {
                let shared: Arc<[Reason]> = reasons.into();
                last_reasons = Some(shared.clone());
                shared
            }
        };
        nodes.push(Planned {
            kind: node.kind,
            id: None,
            key: node.key.clone(),
            action,
            reasons,
            node: Some(index),
        });
    }
    rerun_unreadable_rows(dag, cache, &mut nodes)?;
    for (i, (e, texts)) in orphans.into_iter().zip(orphan_texts).enumerate() {
        if !paired[i] {
            nodes.push(Planned {
                kind: e.kind,
                id: Some(texts.id.into()),
                key: texts.key.into(),
                action: Action::Orphan,
                reasons: Arc::from([Reason::Orphaned]),
                node: None,
            });
        }
    }
    Ok(Plan {
        format: PLAN_FORMAT.into(),
        manifest: String::new(),
        overrides: Vec::new(),
        models: Vec::new(),
        keys: Vec::new(),
        manifest_hash: String::new(),
        lockfile_hash: String::new(),
        nodes,
        estimate: Estimate::default(),
        fingerprint: String::new(),
        skipped_analyses: Vec::new(),
        units: Vec::new(),
        preflight: Vec::new(),
        upstream: Vec::new(),
        catalogue: String::new(),
        context: Vec::new(),
        unlisted: Vec::new(),
    })
}

/// Plans a rerun of every cached node whose stored row apply will read but cannot be
/// read as its kind's row type ([`rows`]), with serde's reason: a row that no longer
/// deserialises is rerun, never handed to the nodes that read it as their failure.
///
/// Apply reads every grade row (the episodes), the compile and analysis rows the
/// nodes that run read, and the transcripts (execute rows) of the episodes it regrades
/// — of every episode when the request rows are read. The small rows are checked
/// whatever runs; transcripts only when they will be read, since reading them all is
/// most of an apply's reading.
fn rerun_unreadable_rows(
    dag: &Dag,
    cache: &Cache,
    nodes: &mut [Planned],
) -> Result<(), CacheError> {
    let small: Vec<usize> = (0..nodes.len())
        .filter(|&p| {
            nodes[p].action == Action::Cached
                && matches!(
                    nodes[p].kind,
                    NodeKind::Compile | NodeKind::Grade | NodeKind::Analysis
                )
        })
        .collect();
    rerun_if_unreadable(cache, nodes, &small)?;
    let runs: FxHashSet<NodeIndex> = nodes
        .iter()
        .filter(|n| n.action.runs())
        .filter_map(|n| n.node)
        .collect();
    let is_requests = |i: NodeIndex| matches!(dag.graph[i].work, Work::Table(Publish::Requests));
    let reads_requests = runs.iter().any(|&i| {
        is_requests(i)
            || dag
                .graph
                .neighbors_directed(i, petgraph::Direction::Incoming)
                .any(is_requests)
    });
    let transcripts: Vec<usize> = (0..nodes.len())
        .filter(|&p| nodes[p].action == Action::Cached && nodes[p].kind == NodeKind::Execute)
        .filter(|&p| {
            reads_requests
                || nodes[p].node.is_some_and(|e| {
                    dag.graph
                        .neighbors(e)
                        .any(|g| dag.graph[g].kind == NodeKind::Grade && runs.contains(&g))
                })
        })
        .collect();
    rerun_if_unreadable(cache, nodes, &transcripts)
}

/// Marks each node at `positions` whose stored row is unreadable as a rerun.
fn rerun_if_unreadable(
    cache: &Cache,
    nodes: &mut [Planned],
    positions: &[usize],
) -> Result<(), CacheError> {
    if positions.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = positions.iter().map(|&p| nodes[p].key.as_ref()).collect();
    let at: HashMap<&str, usize> = positions
        .iter()
        .map(|&p| (nodes[p].key.as_ref(), p))
        .collect();
    // Each row is checked as it is read: held all at once, the rows of a large study
    // were most of a cached plan's memory.
    let mut unreadable: Vec<(usize, String)> = Vec::new();
    cache.for_each_payload(&keys, &mut |key, payload| {
        if let Some(&p) = at.get(key) {
            if let Some(detail) = rows::unreadable(nodes[p].kind, payload) {
                unreadable.push((p, detail));
            }
        }
        Ok(())
    })?;
    unreadable.sort_unstable_by_key(|(p, _)| *p);
    for (p, detail) in unreadable {
        let reason = Reason::RowUnreadable { detail };
        nodes[p].action = Action::Incomplete;
        nodes[p].reasons = Arc::from([reason]);
    }
    Ok(())
}

/// blake3 over every node's identity, key and action, of a plan made from `dag`.
pub fn fingerprint(plan: &Plan, dag: &Dag) -> String {
    // blake3 hashes a long input several chunks at a time (SIMD) and many short
    // updates one chunk at a time: the bytes go in through a buffer of 64 KiB, not one
    // update per node, nor one buffer of every node (27 MB at 145,000 nodes). Same
    // bytes, same hash.
    const BUFFER: usize = 64 * 1024;
    let mut hasher = blake3::Hasher::new();
    let mut buffer: Vec<u8> = Vec::with_capacity(BUFFER);
    let mut put = |bytes: &[u8]| {
        if buffer.len() + bytes.len() > BUFFER {
            hasher.update(&buffer);
            buffer.clear();
        }
        buffer.extend_from_slice(bytes);
    };
    put(plan.manifest_hash.as_bytes());
    put(plan.lockfile_hash.as_bytes());
    for n in &plan.nodes {
        put(Plan::id_of(n, dag).as_bytes());
        put(n.key.as_bytes());
        put(&[n.action as u8, b'\n']);
    }
    hasher.update(&buffer);
    hasher.finalize().to_hex().to_string()
}

fn table_payloads(dag: &Dag, cache: &Cache) -> HashMap<String, String> {
    let keys: Vec<&str> = dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Table)
        .map(|(_, n)| n.key.as_ref())
        .collect();
    cache.payloads(&keys).unwrap_or_default()
}

/// Splits `kind[a=1, b=2]` into its kind and fields.
pub fn parse_identity(id: &str) -> Option<(NodeKind, Vec<(String, String)>)> {
    let (kind, rest) = id.split_once('[')?;
    let inner = rest.strip_suffix(']')?;
    let kind = NodeKind::parse(kind)?;
    let fields = inner
        .split(", ")
        .map(|f| match f.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (String::new(), f.to_string()),
        })
        .collect();
    Some((kind, fields))
}

fn wildcarded<K: AsRef<str>, V: AsRef<str>>(
    kind: NodeKind,
    fields: impl Iterator<Item = (K, V)>,
    skip: usize,
) -> String {
    let mut s = String::with_capacity(64);
    s.push_str(kind.name());
    s.push('[');
    for (i, (k, v)) in fields.enumerate() {
        s.push_str(k.as_ref());
        s.push('=');
        s.push_str(if i == skip { "*" } else { v.as_ref() });
        s.push(';');
    }
    s
}

/// Values of every identity field among the cached nodes, by kind and field.
fn known_values(cache: &Cache) -> Result<HashSet<(NodeKind, String, String)>, CacheError> {
    Ok(cache
        .texts(&cache.latest_entries())?
        .into_iter()
        .filter_map(|e| parse_identity(&e.id))
        .flat_map(|(kind, fields)| fields.into_iter().map(move |(k, v)| (kind, k, v)))
        .collect())
}

/// What is new about a node never seen: the first of its field values the cache has
/// never seen for that kind (nothing, when the cache has no node of that kind).
fn new_what(
    kind: NodeKind,
    fields: &Fields,
    known: &HashSet<(NodeKind, String, String)>,
) -> Option<String> {
    if matches!(kind, NodeKind::Table | NodeKind::Analysis)
        || !known.iter().any(|(k, ..)| *k == kind)
    {
        return None;
    }
    fields.iter().find_map(|(k, v)| {
        (!known.contains(&(kind, k.to_string(), v.to_string()))).then(|| {
            let name = match k {
                "cfg" => "configuration",
                "rep" => "repeat",
                "cap" => "completion_cap",
                "table" | "analysis" => "",
                other => other,
            };
            if name.is_empty() {
                v.to_string()
            } else {
                format!("{name} {v}")
            }
        })
    })
}

impl Plan {
    /// The identity of planned node `n` of a plan made from `dag`.
    pub fn id_of<'a>(n: &'a Planned, dag: &Dag) -> Cow<'a, str> {
        match (&n.id, n.node) {
            (Some(id), _) => Cow::Borrowed(id),
            (None, Some(node)) => Cow::Owned(dag.graph[node].id()),
            (None, None) => Cow::Borrowed(""),
        }
    }

    /// Gives every node its identity, as a plan is written or compared with a saved
    /// one.
    pub fn name_nodes(&mut self, dag: &Dag) {
        for n in &mut self.nodes {
            if n.id.is_none() {
                n.id = n.node.map(|node| dag.graph[node].id().into());
            }
        }
    }

    /// Nodes that run, by kind.
    pub fn to_run(&self) -> BTreeMap<NodeKind, usize> {
        let mut out = BTreeMap::new();
        for n in self.nodes.iter().filter(|n| n.action.runs()) {
            *out.entry(n.kind).or_insert(0) += 1;
        }
        out
    }

    /// Nodes with this action.
    pub fn count(&self, action: Action) -> usize {
        self.nodes.iter().filter(|n| n.action == action).count()
    }

    /// Whether nothing runs.
    pub fn is_empty(&self) -> bool {
        !self.nodes.iter().any(|n| n.action.runs())
    }

    /// The plan as text: one group per (action, kind, reasons), in DAG order, with up
    /// to three identities each; cached nodes only with `show_cached`; then the summary.
    pub fn render(&self, dag: &Dag, show_cached: bool) -> String {
        let mut groups: Vec<(Action, NodeKind, String, Vec<Cow<'_, str>>)> = Vec::new();
        let mut index: HashMap<(Action, NodeKind, String), usize> = HashMap::new();
        for n in &self.nodes {
            if n.action == Action::Cached && !show_cached {
                continue;
            }
            let why = n
                .reasons
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let g = *index
                .entry((n.action, n.kind, why.clone()))
                .or_insert_with(|| {
                    groups.push((n.action, n.kind, why, Vec::new()));
                    groups.len() - 1
                });
            groups[g].3.push(Plan::id_of(n, dag));
        }
        let mut out = String::new();
        for (action, kind, why, ids) in &groups {
            let sign = action.sign();
            let why = if *action == Action::Cached {
                "cached".to_string()
            } else {
                why.clone()
            };
            if ids.len() == 1 {
                let _ = writeln!(out, "  {sign} {}: {why}", ids[0]);
                continue;
            }
            let _ = writeln!(out, "  {sign} {} {} nodes: {why}", ids.len(), kind.name());
            const SHOWN: usize = 3;
            for id in ids.iter().take(SHOWN) {
                let _ = writeln!(out, "      {id}");
            }
            if ids.len() > SHOWN {
                let _ = writeln!(out, "      … and {} more", ids.len() - SHOWN);
            }
        }
        if !out.is_empty() {
            out.push('\n');
        }
        for status in &self.upstream {
            let _ = writeln!(out, "  {}", status.line());
        }
        if !self.upstream.is_empty() {
            out.push('\n');
        }
        for (analysis, comparison) in &self.units {
            let _ = writeln!(out, "  = analysis {analysis}: {comparison}");
        }
        if !self.units.is_empty() {
            out.push('\n');
        }
        for (analysis, why) in &self.skipped_analyses {
            let _ = writeln!(out, "  ! analysis {analysis} is skipped: {why}");
        }
        for (analysis, problem) in &self.preflight {
            let _ = writeln!(out, "  ! analysis {analysis}: {problem}");
        }
        if !self.preflight.is_empty() && self.skipped_analyses.is_empty() {
            out.push('\n');
        }
        if !self.skipped_analyses.is_empty() {
            out.push('\n');
        }
        for warning in &self.context {
            let _ = writeln!(out, "  ! {warning}");
        }
        if !self.context.is_empty() {
            out.push('\n');
        }
        for unlisted in &self.unlisted {
            for line in unlisted.lines(&self.catalogue) {
                let _ = writeln!(out, "  {line}");
            }
        }
        if !self.unlisted.is_empty() {
            out.push('\n');
        }
        out.push_str(&self.summary());
        out.push('\n');
        for key in &self.keys {
            let _ = writeln!(out, "  {}", key.line());
        }
        out
    }

    /// The summary line.
    pub fn summary(&self) -> String {
        let cached = self.count(Action::Cached);
        let orphaned = self.count(Action::Orphan);
        let run = self.to_run();
        if run.is_empty() {
            return format!(
                "No changes: {} nodes cached, nothing to run{}.",
                count(cached as u64),
                if orphaned > 0 {
                    format!(" ({orphaned} orphaned nodes kept in the cache)")
                } else {
                    String::new()
                }
            );
        }
        let total: usize = run.values().sum();
        let by_kind: Vec<String> = run
            .iter()
            .map(|(k, n)| format!("{} {}", count(*n as u64), k.name()))
            .collect();
        let traffic = self.estimate.text();
        format!(
            "Plan: {} to run ({}), {} cached, {} orphaned; {traffic}.",
            count(total as u64),
            by_kind.join(", "),
            count(cached as u64),
            count(orphaned as u64),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_dag() -> Dag {
        Dag::empty()
    }

    /// A plan of one execute node to run, with `estimate`.
    fn plan_with(estimate: Estimate) -> Plan {
        Plan {
            format: PLAN_FORMAT.into(),
            manifest: String::new(),
            overrides: Vec::new(),
            models: Vec::new(),
            keys: Vec::new(),
            manifest_hash: String::new(),
            lockfile_hash: String::new(),
            nodes: vec![Planned {
                kind: NodeKind::Execute,
                id: Some("execute[cfg=a]".into()),
                key: "k".into(),
                action: Action::Create,
                reasons: Arc::from([]),
                node: None,
            }],
            estimate,
            fingerprint: String::new(),
            skipped_analyses: Vec::new(),
            units: Vec::new(),
            preflight: Vec::new(),
            upstream: Vec::new(),
            catalogue: String::new(),
            context: Vec::new(),
            unlisted: Vec::new(),
        }
    }

    /// The fingerprint, hashed through a bounded buffer, is blake3 of every node's
    /// bytes in one piece (the slow reference), across many buffer boundaries.
    #[test]
    fn the_fingerprint_is_the_hash_of_the_plan_bytes_in_one_piece() {
        let mut plan = plan_with(Estimate::default());
        plan.manifest_hash = "m".repeat(64);
        plan.lockfile_hash = "l".repeat(64);
        let one = plan.nodes[0].clone();
        plan.nodes = (0..5_000u32)
            .map(|i| Planned {
                id: Some(format!("execute[cfg=a, rep={i}]").into()),
                key: blake3::hash(&i.to_le_bytes()).to_hex().to_string().into(),
                action: if i % 3 == 0 {
                    Action::Cached
                } else {
                    Action::Create
                },
                ..one.clone()
            })
            .collect();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(plan.manifest_hash.as_bytes());
        bytes.extend_from_slice(plan.lockfile_hash.as_bytes());
        for n in &plan.nodes {
            bytes.extend_from_slice(n.id.as_deref().unwrap_or_default().as_bytes());
            bytes.extend_from_slice(n.key.as_bytes());
            bytes.extend_from_slice(&[n.action as u8, b'\n']);
        }
        assert!(bytes.len() > 4 * 64 * 1024);
        assert_eq!(
            fingerprint(&plan, &empty_dag()),
            blake3::hash(&bytes).to_hex().to_string()
        );
    }

    /// Three requests from a 100-token prompt: 100, 250 and 400 prompt tokens, and three
    /// median responses of 152.
    #[test]
    fn a_conversation_grows_by_an_exchange_a_request() {
        assert_eq!(Estimate::conversation(100, 3), (3, 750, 456));
        assert_eq!(Estimate::conversation(100, 0), (0, 0, 0));
    }

    /// A node whose identity the plan does not hold (a node of its DAG, not yet named)
    /// is never written with a blank identity: writing the plan fails, saying why.
    #[test]
    fn a_plan_with_an_unnamed_node_is_not_written() {
        let mut plan = plan_with(Estimate::default());
        plan.nodes[0].id = None;
        let written = serde_json::to_string(&plan);
        assert!(
            written
                .as_ref()
                .is_err_and(|e| e.to_string().contains("name the plan's nodes")),
            "{written:?}"
        );
        assert_eq!(Plan::id_of(&plan.nodes[0], &empty_dag()), "");
    }

    /// A saved plan says why each node runs (`why`, made as it is written), and reads
    /// back with the same reasons.
    #[test]
    fn a_saved_plan_writes_why_and_reads_back() {
        let mut plan = plan_with(Estimate::default());
        plan.nodes[0].reasons = Arc::from([Reason::UpstreamChanged]);
        let text = serde_json::to_string(&plan).unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            value["nodes"][0]["why"][0],
            serde_json::Value::from(Reason::UpstreamChanged.to_string())
        );
        let back: Plan = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(*back.nodes[0].reasons, [Reason::UpstreamChanged]);
    }

    /// The simulated panel's requests are priced as their models list, and the summary
    /// says no one pays them.
    #[test]
    fn the_summary_says_what_is_paid_and_what_the_simulated_panel_costs_nothing() {
        let live = Estimate {
            requests: 100,
            cost_usd: 2.5,
            ..Estimate::default()
        };
        assert!(plan_with(live)
            .summary()
            .ends_with("≈100 provider requests, ≈$2.50 at the listed prices."));
        let simulated = Estimate {
            simulated_requests: 100,
            simulated_cost_usd: 2.5,
            ..live
        };
        assert!(plan_with(simulated).summary().ends_with(
            "≈100 requests to the simulated panel, which cost nothing (≈$2.50 at its models' \
             listed prices)."
        ));
        let mixed = Estimate {
            requests: 130,
            cost_usd: 3.5,
            ..simulated
        };
        assert!(plan_with(mixed).summary().ends_with(
            "≈30 provider requests, ≈$1.00 at the listed prices, and ≈100 to the simulated \
             panel, which cost nothing (≈$2.50 at its models' listed prices)."
        ));
    }

    /// Issue 29: a `--model` configuration's requests read "≈$0.00 at the listed
    /// prices" where it lists none.
    #[test]
    fn requests_with_no_listed_prices_are_of_unknown_cost_even_in_a_mixed_total() {
        let unpriced = Estimate {
            requests: 8,
            unpriced_requests: 8,
            ..Estimate::default()
        };
        let text = plan_with(unpriced).summary();
        assert!(
            text.ends_with("≈8 provider requests of unknown cost (no listed prices)."),
            "{text}"
        );
        assert!(!text.contains('$'), "{text}");
        let mixed = Estimate {
            requests: 100,
            cost_usd: 2.5,
            unpriced_requests: 40,
            ..Estimate::default()
        };
        assert!(plan_with(mixed).summary().ends_with(
            "≈100 provider requests, ≈$2.50 at the listed prices for ≈60 of them and an \
             unknown cost for the ≈40 with no listed prices."
        ));
        let with_panel = Estimate {
            requests: 108,
            simulated_requests: 100,
            simulated_cost_usd: 2.5,
            cost_usd: 2.5,
            unpriced_requests: 8,
            ..Estimate::default()
        };
        assert!(plan_with(with_panel).summary().ends_with(
            "≈8 provider requests of unknown cost (no listed prices), and ≈100 to the \
             simulated panel, which cost nothing (≈$2.50 at its models' listed prices)."
        ));
    }

    #[test]
    fn a_configuration_the_catalogue_does_not_list_is_said_to_have_no_prices_and_no_window() {
        let mut plan = plan_with(Estimate {
            requests: 8,
            unpriced_requests: 8,
            ..Estimate::default()
        });
        plan.catalogue = "manifests/configurations.toml".into();
        plan.unlisted = vec![Unlisted {
            configuration: "openai-x".into(),
            flag: "openai/x".into(),
            route: "http://127.0.0.1:9/v1".into(),
        }];
        let text = plan.render(&empty_dag(), false);
        assert!(
            text.contains(
                "  ! openai-x (--model openai/x, http://127.0.0.1:9/v1) has no listed prices: \
                 what its requests cost is unknown, not $0\n  ! openai-x has no \
                 context_window: its prompts are not checked against the served model's \
                 context\n    to set them, add an entry named `openai-x` on the same route, \
                 with `prices` and `context_window`, to manifests/configurations.toml: \
                 --model openai/x then runs that entry"
            ),
            "{text}"
        );
    }

    #[test]
    fn identities_parse_back_into_their_fields() {
        let (kind, fields) =
            parse_identity("execute[cfg=a, v=8, cap=1024]").unwrap_or_else(|| panic!());
        assert_eq!(kind, NodeKind::Execute);
        assert_eq!(fields[2], ("cap".to_string(), "1024".to_string()));
        assert!(parse_identity("nonsense").is_none());
    }
}
