//! The configuration catalogue: a configuration is a served model behind a provider
//! route plus its harness settings — execution profile, retry policy, concurrency,
//! timeout — with its organization and frozen prices.
//!
//! Read from TOML (`manifests/configurations.toml`, a list of `[[configuration]]`) and
//! validated when loaded, every problem at once at its span: unknown keys, names that
//! are not identifiers ([`tbb_diag::names`]: a name may end up in a path) or are
//! duplicated, limits out of their range ([`tbb_diag::limits`], the ranges the manifest
//! and the command line check too: attempts, backoffs, concurrency, timeouts, context
//! windows), prices that are negative or not finite, unknown or out-of-range sim
//! parameters, speeds of simulated agents (`[configuration.speed]`, [`Speed`]). A
//! catalogue that loads never fails later on its own values. Keys are never in the
//! file: a configuration names the environment variable that holds its key
//! (`api_key_env`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use miette::{Diagnostic, SourceSpan};
use serde::{Deserialize, Serialize};
use tbb_diag::source::{Snippet, SourceFile};
use thiserror::Error;

use tbb_diag::spans::SpanIndex;
use tbb_diag::{limits, names};

pub use super::speed::Speed;

/// Which protocol a configuration speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// The built-in simulated panel (no network).
    Sim,
    /// OpenAI-compatible chat completions (OpenAI, vLLM, SGLang, llama.cpp, Ollama,
    /// OpenRouter, ...), chosen by `base_url`.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent`.
    Gemini,
}

/// Frozen prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Per million input tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
}

impl Prices {
    /// Cost of an episode's tokens at these prices (no cache credit).
    pub fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// Request fields an execution profile may omit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestField {
    /// `temperature`.
    Temperature,
    /// `seed`.
    Seed,
    /// `parallel_tool_calls` (or the protocol's equivalent).
    ParallelToolCalls,
}

/// How much reasoning a route is asked for, sent in each protocol's own field:
/// `reasoning_effort` on chat completions, `output_config.effort` on Anthropic
/// Messages, `generationConfig.thinkingConfig.thinkingLevel` on Gemini. Absent, nothing
/// is sent and the provider's default applies (the paper leaves it at the default on
/// all routes but one). Each protocol accepts its own levels ([`Self::accepted_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// No reasoning (chat completions only).
    None,
    /// The least reasoning a model offers (chat completions, Gemini).
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// More than high (chat completions, Anthropic).
    Xhigh,
    /// The most (Anthropic).
    Max,
}

impl ReasoningEffort {
    /// The level as every protocol spells it.
    pub fn name(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
            ReasoningEffort::Max => "max",
        }
    }

    /// The levels a protocol's field takes (none for the simulated panel, whose
    /// mechanisms do not model an effort setting).
    pub fn levels(provider: ProviderKind) -> &'static [ReasoningEffort] {
        use ReasoningEffort::*;
        match provider {
            ProviderKind::Openai => &[None, Minimal, Low, Medium, High, Xhigh],
            ProviderKind::Anthropic => &[Low, Medium, High, Xhigh, Max],
            ProviderKind::Gemini => &[Minimal, Low, Medium, High],
            ProviderKind::Sim => &[],
        }
    }

    /// Whether `provider`'s field takes this level.
    pub fn accepted_by(self, provider: ProviderKind) -> bool {
        Self::levels(provider).contains(&self)
    }
}

/// How the completion cap is sent on OpenAI-compatible routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens` (current OpenAI).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens` (older and many compatible servers).
    MaxTokens,
}

/// Which request fields a route accepts, and their values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionProfile {
    /// Fields not sent (each omission is recorded with the episode).
    #[serde(default)]
    pub omit: BTreeSet<RequestField>,
    /// Temperature, when sent.
    #[serde(default)]
    pub temperature: f64,
    /// The completion-cap field on OpenAI-compatible routes.
    #[serde(default)]
    pub max_tokens_field: MaxTokensField,
    /// The reasoning effort sent on every request; absent, the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
}

impl Default for ExecutionProfile {
    fn default() -> Self {
        ExecutionProfile {
            omit: BTreeSet::new(),
            temperature: 0.0,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            reasoning_effort: None,
        }
    }
}

/// Failures a retry may cure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retryable {
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx.
    ServerError,
    /// No response in time.
    Timeout,
    /// Connection failures.
    Transport,
}

/// When and how to retry a failed request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// First backoff; doubles each retry.
    pub base_delay_ms: u64,
    /// Longest backoff (and longest `Retry-After` honoured).
    pub max_delay_ms: u64,
    /// Which failures are retried.
    pub retry_on: BTreeSet<Retryable>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay_ms: 500,
            max_delay_ms: 30_000,
            retry_on: [
                Retryable::RateLimited,
                Retryable::ServerError,
                Retryable::Timeout,
                Retryable::Transport,
            ]
            .into_iter()
            .collect(),
        }
    }
}

fn default_concurrency() -> u32 {
    4
}

/// Consecutive infrastructure failures that stop a route when its catalogue entry does
/// not say (`max_infra_failures`): enough that a flaky route's occasional failure does
/// not stop it, few enough that a dead one costs seconds, not the study.
pub const DEFAULT_MAX_INFRA_FAILURES: u32 = 8;

/// The per-request timeout of a remote route.
pub const REMOTE_TIMEOUT_MS: u64 = 120_000;

/// The per-request timeout of a route on this machine (see [`Configuration::is_local`]):
/// a model served on CPU took 190 s over its first V = 32 prompts, and a timed-out
/// request is retried whole, prompt processing and all, so the remote default would
/// turn a slow first request into four.
pub const LOCAL_TIMEOUT_MS: u64 = 900_000;

/// Marks `timeout_ms` as absent from the file until [`Catalogue::load`] fills in the
/// default of the route's locality (an explicit 0 is refused there, by span).
fn unset_timeout_ms() -> u64 {
    0
}

fn enabled() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    /// Unique name.
    pub name: String,
    /// The organization whose model it serves.
    pub organization: String,
    /// Protocol.
    pub provider: ProviderKind,
    /// Model identifier sent to the route.
    pub model: String,
    /// Pinned served version (recorded in lockfiles).
    #[serde(default)]
    pub version: Option<String>,
    /// The weights' numeric format as the route serves them (`bf16`, `fp8`, `fp4`, a
    /// GGUF type such as `Q4_K_M`): recorded with every episode, never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
    /// Base URL of the route (protocol default when absent).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The key is sent when its variable is set, and the route is used without one when
    /// it is not (a server on this machine, which takes none unless started with one).
    #[serde(default, skip_serializing_if = "is_false")]
    pub api_key_optional: bool,
    /// Frozen prices.
    pub prices: Prices,
    /// Request fields and values.
    #[serde(default)]
    pub profile: ExecutionProfile,
    /// Retries.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Requests in flight on this configuration's route at most.
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    /// Consecutive episodes of this route ended by an infrastructure failure after
    /// which `tbb apply` stops scheduling the route (its remaining episodes stay
    /// planned, unrecorded); 0 never stops it. When absent, [`DEFAULT_MAX_INFRA_FAILURES`].
    /// The first configuration naming a route sets it, as with `concurrency`. Not part
    /// of what an episode is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_infra_failures: Option<u32>,
    /// Per-request timeout; when absent, [`LOCAL_TIMEOUT_MS`] for a route on this
    /// machine and [`REMOTE_TIMEOUT_MS`] otherwise.
    #[serde(default = "unset_timeout_ms")]
    pub timeout_ms: u64,
    /// The tokens the served model can hold, prompt and completion together (a local
    /// server's context size, `-c` / `--max-model-len`). `tbb plan` warns where a
    /// request will not fit. Not part of what an episode is: it never reaches the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Disabled configurations are listed but never run (live examples without keys).
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Mechanism parameters of a simulated agent (`provider = "sim"` only).
    #[serde(default)]
    pub sim: Option<toml::Table>,
    /// Modelled speed of a simulated agent (`provider = "sim"` only; defaults when
    /// absent): its wall time is modelled from token counts, never measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<Speed>,
}

impl Configuration {
    /// The route requests share a concurrency limit on.
    pub fn route(&self) -> String {
        match &self.base_url {
            Some(url) => url.clone(),
            None => format!("{:?}", self.provider).to_lowercase(),
        }
    }

    /// Whether the route is served on this machine: a live route whose `base_url`'s host
    /// is `localhost` (or a name under it) or a loopback or unspecified address
    /// (`127.0.0.0/8`, `::1`, `0.0.0.0`). Such a route gets the longer default timeout.
    pub fn is_local(&self) -> bool {
        let Some(url) = self.base_url.as_deref() else {
            return false;
        };
        let Ok(url) = reqwest::Url::parse(url) else {
            return false;
        };
        let Some(host) = url.host_str() else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
            Err(_) => {
                let host = host.to_ascii_lowercase();
                host == "localhost" || host.ends_with(".localhost")
            }
        }
    }

    /// The modelled latency of a request with this usage: `Some` for a simulated
    /// configuration (its `[configuration.speed]`, or the defaults), `None` for a live
    /// route, whose wall time is measured.
    pub fn modelled_latency_ms(&self, input_tokens: u64, output_tokens: u64) -> Option<u64> {
        self.wall_time_is_modelled().then(|| {
            self.speed
                .unwrap_or_default()
                .latency_ms(input_tokens, output_tokens)
        })
    }

    /// Whether this configuration's wall time is modelled (a simulated agent's) rather
    /// than measured (a live route's).
    pub fn wall_time_is_modelled(&self) -> bool {
        self.provider == ProviderKind::Sim
    }

    /// The configuration as it determines what an episode is: whole, except how many
    /// requests it may have in flight and whether it is enabled, which change when an
    /// episode runs, not what it is. Episode keys and execute-node keys hash this.
    pub fn identity(&self) -> Configuration {
        Configuration {
            concurrency: 0,
            enabled: true,
            context_window: None,
            max_infra_failures: None,
            ..self.clone()
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogueFile {
    configuration: Vec<Configuration>,
}

/// The configurations of a catalogue file.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// The file.
    pub path: PathBuf,
    /// Configurations in file order.
    pub configurations: Vec<Configuration>,
}

/// A catalogue that cannot be used.
#[derive(Debug, Error, Diagnostic)]
pub enum CatalogueError {
    /// Unreadable file.
    #[error("cannot read {}: {source}", path.display())]
    #[diagnostic(code(tbb::config::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Not valid TOML, or not the schema, or rules broken; every problem found is
    /// listed (the first [`MAX_SHOWN`], then how many more).
    #[error("{total} problem(s) in the configuration catalogue {}", path.display())]
    #[diagnostic(code(tbb::config::invalid))]
    Invalid {
        /// The catalogue.
        path: PathBuf,
        /// How many problems were found.
        total: usize,
        /// The problems shown.
        #[related]
        problems: Vec<CatalogueProblem>,
    },
}

pub use tbb_diag::problems::MAX_SHOWN;

/// One problem in a catalogue, at its value's span.
#[derive(Debug, Error, Diagnostic)]
#[error("{message}")]
pub struct CatalogueProblem {
    /// What is wrong.
    pub message: String,
    /// What the problem shows of the catalogue's text (shared by every problem, or a
    /// window of an over-long line: [`tbb_diag::source`]).
    #[source_code]
    pub src: Snippet,
    /// Where.
    #[label("here")]
    pub span: Option<SourceSpan>,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}

impl CatalogueError {
    fn invalid(path: &Path, mut problems: Vec<CatalogueProblem>) -> CatalogueError {
        let total = tbb_diag::problems::bound(&mut problems, |cut| {
            Some(CatalogueProblem {
                message: format!("… and {cut} more"),
                src: SourceFile::nowhere(path.display().to_string()),
                span: None,
                help: None,
            })
        });
        CatalogueError::Invalid {
            path: path.to_path_buf(),
            total,
            problems,
        }
    }

    /// How many problems were found (0 when the file could not be read).
    pub fn problem_count(&self) -> usize {
        match self {
            CatalogueError::Invalid { total, .. } => *total,
            CatalogueError::Io { .. } => 0,
        }
    }
}

impl Catalogue {
    /// Reads and checks a catalogue file: every rule is checked and every problem
    /// reported at once, at its value's span (names that are not identifiers or are
    /// duplicated, sim tables on the wrong provider, limits out of range, prices that
    /// are negative or not finite, unknown, mistyped or out-of-range sim parameters).
    // The error is a rich diagnostic built once per load; its size does not matter.
    #[allow(clippy::result_large_err)]
    pub fn load(path: &Path) -> Result<Catalogue, CatalogueError> {
        let text = tbb_diag::input::read_text(path, tbb_diag::input::MAX_SOURCE_BYTES).map_err(
            |source| CatalogueError::Io {
                path: path.to_path_buf(),
                source,
            },
        )?;
        Catalogue::parse(path, &text)
    }

    /// Checks a catalogue's text as [`Catalogue::load`] does; `path` names it in
    /// diagnostics.
    #[allow(clippy::result_large_err)]
    pub fn parse(path: &Path, text: &str) -> Result<Catalogue, CatalogueError> {
        let source = SourceFile::new(path.display().to_string(), text);
        let invalid = |message: String, span: Option<std::ops::Range<usize>>| {
            let (src, span) = source.at(span);
            CatalogueError::invalid(
                path,
                vec![CatalogueProblem {
                    message,
                    src,
                    span,
                    help: None,
                }],
            )
        };
        let spans = SpanIndex::parse(text).map_err(|e| invalid(e.message, e.span))?;
        let mut file: CatalogueFile =
            toml::from_str(text).map_err(|e| invalid(e.message().trim().to_string(), e.span()))?;
        let mut problems = Vec::new();
        let mut problem = |at: &str, message: String, help: Option<String>| {
            let (src, span) = source.at(spans.find(at));
            problems.push(CatalogueProblem {
                message,
                src,
                span,
                help,
            });
        };
        let mut seen = BTreeSet::new();
        for (i, c) in file.configuration.iter().enumerate() {
            let at = |key: &str| format!("configuration.{i}.{key}");
            let name = &c.name;
            if !seen.insert(name.as_str()) {
                problem(
                    &at("name"),
                    format!("configuration `{name}` is defined twice"),
                    Some("configuration names are unique; rename or remove one".into()),
                );
            }
            if (c.provider == ProviderKind::Sim) != c.sim.is_some() {
                problem(
                    &at("provider"),
                    format!("configuration `{name}`: a `[configuration.sim]` table goes with provider = \"sim\", and only with it"),
                    None,
                );
            }
            if let Err(e) = names::check(name) {
                problem(
                    &at("name"),
                    format!("configuration name {e}"),
                    Some(format!(
                        "a configuration name is an identifier: {}",
                        names::RULE
                    )),
                );
            }
            // A `timeout_ms` left out is 0 until the default of the route's locality is
            // filled in below; only a value written in the file is checked.
            let timeout = spans.contains(&at("timeout_ms")).then_some((
                "timeout_ms",
                &limits::TIMEOUT_MS,
                c.timeout_ms,
            ));
            let window = c
                .context_window
                .map(|w| ("context_window", &limits::CONTEXT_WINDOW, w));
            for (key, limit, value) in [
                (
                    "retry.max_attempts",
                    &limits::RETRY_ATTEMPTS,
                    u64::from(c.retry.max_attempts),
                ),
                (
                    "retry.base_delay_ms",
                    &limits::RETRY_DELAY_MS,
                    c.retry.base_delay_ms,
                ),
                (
                    "retry.max_delay_ms",
                    &limits::RETRY_DELAY_MS,
                    c.retry.max_delay_ms,
                ),
                (
                    "concurrency",
                    &limits::CONCURRENCY,
                    u64::from(c.concurrency),
                ),
            ]
            .into_iter()
            .chain(timeout)
            .chain(window)
            {
                if let Err(e) = limit.check::<u64>(value) {
                    problem(
                        &at(key),
                        format!("configuration `{name}`: {e}"),
                        Some(limit.help.into()),
                    );
                }
            }
            for (key, x) in [
                ("input_per_mtok", c.prices.input_per_mtok),
                ("output_per_mtok", c.prices.output_per_mtok),
            ] {
                if !x.is_finite() || x < 0.0 {
                    problem(
                        &at(&format!("prices.{key}")),
                        format!("configuration `{name}`: price {key} = {x} is not a finite, non-negative number of USD"),
                        Some("prices are USD per million tokens, 0 for local or simulated models".into()),
                    );
                }
            }
            if let Some(effort) = c.profile.reasoning_effort {
                if !effort.accepted_by(c.provider) {
                    let levels: Vec<&str> = ReasoningEffort::levels(c.provider)
                        .iter()
                        .map(|l| l.name())
                        .collect();
                    problem(
                        &at("profile.reasoning_effort"),
                        format!(
                            "configuration `{name}`: reasoning_effort = \"{}\" is not a level its protocol takes",
                            effort.name()
                        ),
                        Some(if levels.is_empty() {
                            "the simulated panel's mechanisms do not model a reasoning effort: remove the field".into()
                        } else {
                            format!("this protocol takes {}", levels.join(", "))
                        }),
                    );
                }
            }
            if let Some(q) = &c.quantization {
                if q.is_empty()
                    || q.len() > 32
                    || !q
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "_-.".contains(ch))
                {
                    problem(
                        &at("quantization"),
                        format!("configuration `{name}`: quantization = {q:?} is not a format name"),
                        Some("one word of at most 32 letters, digits, `_`, `-` or `.`, as the route names it: bf16, fp8, fp4, Q4_K_M".into()),
                    );
                }
            }
            let t = c.profile.temperature;
            if !t.is_finite() || t < 0.0 {
                problem(
                    &at("profile.temperature"),
                    format!("configuration `{name}`: temperature = {t} is not a finite, non-negative number"),
                    None,
                );
            }
            if let Some(speed) = &c.speed {
                if c.provider != ProviderKind::Sim {
                    problem(
                        &at("speed"),
                        format!("configuration `{name}`: a `[configuration.speed]` table models the latency of a simulated agent; a live route's wall time is measured"),
                        Some("remove the table, or set provider = \"sim\"".into()),
                    );
                }
                for (key, message) in speed.problems() {
                    problem(
                        &at(&format!("speed.{key}")),
                        format!("configuration `{name}`: {message}"),
                        None,
                    );
                }
            }
            if let Some(sim) = &c.sim {
                for (key, message) in tbb_agent::sim::Params::table_problems(sim) {
                    problem(
                        &at(&format!("sim.{key}")),
                        format!("configuration `{name}`: {message}"),
                        None,
                    );
                }
            }
        }
        if !problems.is_empty() {
            return Err(CatalogueError::invalid(path, problems));
        }
        for c in &mut file.configuration {
            if c.timeout_ms == 0 {
                c.timeout_ms = if c.is_local() {
                    LOCAL_TIMEOUT_MS
                } else {
                    REMOTE_TIMEOUT_MS
                };
            }
        }
        Ok(Catalogue {
            path: path.to_path_buf(),
            configurations: file.configuration,
        })
    }

    /// The configuration with this name.
    pub fn get(&self, name: &str) -> Option<&Configuration> {
        self.configurations.iter().find(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue(body: &str) -> Result<Catalogue, CatalogueError> {
        Catalogue::parse(Path::new("test.toml"), body)
    }

    fn live(name: &str, base_url: &str, extra: &str) -> String {
        format!(
            "[[configuration]]\nname = \"{name}\"\norganization = \"Local\"\nprovider = \"openai\"\n\
             model = \"m\"\nbase_url = \"{base_url}\"\n\
             prices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\n{extra}\n"
        )
    }

    #[test]
    fn a_route_on_this_machine_gets_the_local_timeout_unless_it_sets_one() {
        let text = [
            live("loopback", "http://127.0.0.1:8080/v1", ""),
            live("named", "http://localhost:11434/v1", ""),
            live("v6", "http://[::1]:8000/v1", ""),
            live("remote", "https://api.example.test/v1", ""),
            live("explicit", "http://127.0.0.1:8080/v1", "timeout_ms = 5000"),
        ]
        .concat();
        let cat = catalogue(&text).expect("valid catalogue");
        let timeout = |n: &str| cat.get(n).map(|c| c.timeout_ms);
        assert_eq!(timeout("loopback"), Some(LOCAL_TIMEOUT_MS));
        assert_eq!(timeout("named"), Some(LOCAL_TIMEOUT_MS));
        assert_eq!(timeout("v6"), Some(LOCAL_TIMEOUT_MS));
        assert_eq!(timeout("remote"), Some(REMOTE_TIMEOUT_MS));
        assert_eq!(timeout("explicit"), Some(5000));
        assert!(cat.get("loopback").is_some_and(Configuration::is_local));
        assert!(!cat.get("remote").is_some_and(Configuration::is_local));
    }

    #[test]
    fn a_zero_timeout_or_context_window_is_refused_at_its_span() {
        let text = live(
            "zero",
            "http://127.0.0.1:8080/v1",
            "timeout_ms = 0\ncontext_window = 0",
        );
        let err = catalogue(&text).expect_err("refused");
        let CatalogueError::Invalid { problems, .. } = err else {
            panic!("not a validation error");
        };
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert!(messages
            .iter()
            .any(|m| m.contains("timeout_ms 0 is out of range")));
        assert!(messages
            .iter()
            .any(|m| m.contains("context_window 0 is out of range")));
        assert!(problems.iter().all(|p| p.span.is_some()));
    }

    #[test]
    fn the_context_window_is_not_part_of_what_an_episode_is() {
        let text = live("w", "http://127.0.0.1:8080/v1", "context_window = 4096");
        let cat = catalogue(&text).expect("valid catalogue");
        let c = cat.get("w").expect("present");
        assert_eq!(c.context_window, Some(4096));
        let mut without = c.clone();
        without.context_window = None;
        assert_eq!(c.identity(), without.identity());
    }

    #[test]
    fn quantization_and_reasoning_effort_are_read_and_checked() {
        let text = live(
            "q",
            "http://127.0.0.1:8080/v1",
            "quantization = \"Q4_K_M\"\nprofile = { reasoning_effort = \"minimal\" }",
        );
        let cat = catalogue(&text).expect("valid catalogue");
        let c = cat.get("q").expect("present");
        assert_eq!(c.quantization.as_deref(), Some("Q4_K_M"));
        assert_eq!(c.profile.reasoning_effort, Some(ReasoningEffort::Minimal));
        // Both are what the episode is: they enter the identity.
        let mut without = c.clone();
        without.quantization = None;
        assert_ne!(c.identity(), without.identity());

        let bad = live(
            "b",
            "http://127.0.0.1:8080/v1",
            "quantization = \"4 bit\"\nprofile = { reasoning_effort = \"max\" }",
        );
        let problems = problems_of(&bad);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].0.contains("\"max\" is not a level"),
            "{problems:?}"
        );
        assert_eq!(problems[0].1, "\"max\"");
        assert!(
            problems[1].0.contains("is not a format name"),
            "{problems:?}"
        );
        // Every level some protocol takes; none the simulated panel does.
        for level in [ReasoningEffort::None, ReasoningEffort::Max] {
            assert!(!level.accepted_by(ProviderKind::Sim));
        }
        assert!(ReasoningEffort::Max.accepted_by(ProviderKind::Anthropic));
        assert!(!ReasoningEffort::Minimal.accepted_by(ProviderKind::Anthropic));
    }

    #[test]
    fn the_breaker_of_a_route_is_not_part_of_what_an_episode_is() {
        let text = live("b", "http://127.0.0.1:8080/v1", "max_infra_failures = 3");
        let cat = catalogue(&text).expect("valid catalogue");
        let c = cat.get("b").expect("present");
        assert_eq!(c.max_infra_failures, Some(3));
        let mut without = c.clone();
        without.max_infra_failures = None;
        assert_eq!(c.identity(), without.identity());
    }

    #[test]
    fn a_toml_1_1_catalogue_is_read_and_its_problems_point_into_it() {
        // Regression: the catalogue was read as TOML 1.1 but its spans were indexed by
        // a TOML 1.0 parser, which refused an inline table over several lines.
        let over_lines = |extra: &str| {
            format!(
                "[[configuration]]\nname = \"lines\"\norganization = \"Local\"\n\
                 provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
                 prices = {{\n  input_per_mtok = 0.5,\n  output_per_mtok = 1.5,\n}}\n\
                 retry = {{\n  max_attempts = {extra},\n  base_delay_ms = 1,\n  max_delay_ms = 2,\n  \
                 retry_on = [],\n}}\n"
            )
        };
        let cat = catalogue(&over_lines("3")).expect("valid catalogue");
        let prices = cat.get("lines").map(|c| c.prices.output_per_mtok);
        assert_eq!(prices, Some(1.5));
        let problems = problems_of(&over_lines("1000"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].1, "1000", "{problems:?}");
    }

    #[test]
    fn a_syntax_error_in_the_catalogue_reads_as_toml_reports_it() {
        // Regression: the span index's older parser refused a catalogue first, in its
        // own words and at its own place, not in those of the `toml` that reads
        // families and manifests.
        for broken in [
            "[[configuration]]\nname = = \"x\"\n",
            "[[configuration]]\nname = \"x\"\nname = \"y\"\n",
            "[[configuration]]\nprices = { input_per_mtok = 1.\n",
            "[[configuration]\n",
            "[[configuration]]\nname = \"x\n",
        ] {
            let Err(expected) = toml::from_str::<toml::Table>(broken) else {
                panic!("{broken:?} is valid TOML");
            };
            let Err(CatalogueError::Invalid { problems, .. }) = catalogue(broken) else {
                panic!("{broken:?} was not refused as invalid");
            };
            assert_eq!(problems.len(), 1, "{broken:?}: {problems:?}");
            assert_eq!(problems[0].message, expected.message().trim(), "{broken:?}");
            let at = problems[0].span.map(|s| s.offset());
            assert_eq!(at, expected.span().map(|s| s.start), "{broken:?}");
        }
    }

    fn problems_of(text: &str) -> Vec<(String, String)> {
        match catalogue(text) {
            Err(CatalogueError::Invalid { problems, .. }) => problems
                .iter()
                .map(|p| {
                    let at = p
                        .span
                        .map(|s| text[s.offset()..s.offset() + s.len()].to_string())
                        .unwrap_or_default();
                    (p.message.clone(), at)
                })
                .collect(),
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn names_that_are_not_identifiers_are_refused_at_their_span() {
        for bad in ["", "../../../../etc/passwd", "Loud", "a b"] {
            let problems = problems_of(&live(bad, "http://127.0.0.1:8080/v1", ""));
            assert_eq!(problems.len(), 1, "{bad:?}: {problems:?}");
            let (message, at) = &problems[0];
            assert!(
                message.starts_with("configuration name `")
                    && message.contains("is not an identifier"),
                "{message}"
            );
            assert_eq!(at, &format!("\"{bad}\""));
        }
    }

    #[test]
    fn limits_out_of_range_are_refused_at_their_span_in_the_shared_wording() {
        let text = live(
            "limited",
            "https://api.example.test/v1",
            "concurrency = 0\ntimeout_ms = 100000000000\n\
             retry = { max_attempts = 1000, base_delay_ms = 1, max_delay_ms = 99999999999, retry_on = [] }",
        );
        let problems = problems_of(&text);
        let expect = |limit: &'static limits::Limit, value: u64, at: &str| {
            let wording = limit.check::<u64>(value).err().map(|e| e.to_string());
            let wording = wording.unwrap_or_else(|| panic!("{value} is in range"));
            assert!(
                problems.iter().any(|(m, span)| m
                    == &format!("configuration `limited`: {wording}")
                    && span == at),
                "{wording} at {at}: {problems:?}"
            );
        };
        expect(&limits::CONCURRENCY, 0, "0");
        expect(&limits::TIMEOUT_MS, 100_000_000_000, "100000000000");
        expect(&limits::RETRY_ATTEMPTS, 1000, "1000");
        expect(&limits::RETRY_DELAY_MS, 99_999_999_999, "99999999999");
        assert_eq!(problems.len(), 4, "{problems:?}");
    }
}
