//! The configuration catalogue: a configuration is a served model behind a provider
//! route plus its harness settings — execution profile, retry policy, concurrency,
//! timeout — with its organization and frozen prices.
//!
//! Read from TOML (`manifests/configurations.toml`, a list of `[[configuration]]`).
//! Unknown keys are errors at their span. Keys are never in the file: a configuration
//! names the environment variable that holds its key (`api_key_env`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use miette::{Diagnostic, NamedSource, SourceSpan};
use serde::{Deserialize, Serialize};
use thiserror::Error;

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
}

impl Default for ExecutionProfile {
    fn default() -> Self {
        ExecutionProfile {
            omit: BTreeSet::new(),
            temperature: 0.0,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
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

fn default_timeout_ms() -> u64 {
    120_000
}

fn enabled() -> bool {
    true
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
    /// Base URL of the route (protocol default when absent).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
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
    /// Per-request timeout.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Disabled configurations are listed but never run (live examples without keys).
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Mechanism parameters of a simulated agent (`provider = "sim"` only).
    #[serde(default)]
    pub sim: Option<toml::Table>,
}

impl Configuration {
    /// The route requests share a concurrency limit on.
    pub fn route(&self) -> String {
        match &self.base_url {
            Some(url) => url.clone(),
            None => format!("{:?}", self.provider).to_lowercase(),
        }
    }

    /// The configuration as it determines what an episode is: whole, except how many
    /// requests it may have in flight and whether it is enabled, which change when an
    /// episode runs, not what it is. Episode keys and execute-node keys hash this.
    pub fn identity(&self) -> Configuration {
        Configuration {
            concurrency: 0,
            enabled: true,
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
    /// Not valid TOML, or not the schema, or a rule broken.
    #[error("{message}")]
    #[diagnostic(code(tbb::config::invalid))]
    Invalid {
        /// What is wrong.
        message: String,
        /// The file.
        #[source_code]
        src: NamedSource<String>,
        /// Where.
        #[label("here")]
        span: SourceSpan,
        /// How to fix it.
        #[help]
        help: Option<String>,
    },
}

impl Catalogue {
    /// Reads and checks a catalogue file.
    // The error is a rich diagnostic built once per load; its size does not matter.
    #[allow(clippy::result_large_err)]
    pub fn load(path: &Path) -> Result<Catalogue, CatalogueError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogueError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |message: String, span: std::ops::Range<usize>, help: Option<String>| {
            CatalogueError::Invalid {
                message: format!("{}: {message}", path.display()),
                src: NamedSource::new(path.display().to_string(), text.clone()),
                span: span.into(),
                help,
            }
        };
        let file: CatalogueFile = toml::from_str(&text)
            .map_err(|e| invalid(e.message().to_string(), e.span().unwrap_or(0..0), None))?;
        let mut names = BTreeSet::new();
        for c in &file.configuration {
            let at = text.find(&format!("\"{}\"", c.name)).unwrap_or(0);
            let span = at..at + c.name.len() + 2;
            if !names.insert(c.name.as_str()) {
                return Err(invalid(
                    format!("configuration `{}` is defined twice", c.name),
                    span,
                    None,
                ));
            }
            if (c.provider == ProviderKind::Sim) != c.sim.is_some() {
                return Err(invalid(
                    format!("configuration `{}`: a `[configuration.sim]` table goes with provider = \"sim\", and only with it", c.name),
                    span,
                    None,
                ));
            }
            if c.retry.max_attempts == 0 || c.concurrency == 0 {
                return Err(invalid(
                    format!(
                        "configuration `{}`: retry.max_attempts and concurrency must be at least 1",
                        c.name
                    ),
                    span,
                    None,
                ));
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
