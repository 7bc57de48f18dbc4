//! Providers: the [`Provider`] trait, the chat types ([`chat`]), the configuration
//! catalogue ([`config`]), retries and per-route concurrency ([`retry`]), the three wire
//! clients ([`openai`], [`anthropic`], [`gemini`]) and the simulated panel ([`sim`]).
//!
//! Owns: everything between a [`chat::ChatRequest`] and a [`chat::ChatResponse`] — the
//! wire formats, keys (read from the environment variable a configuration names, and
//! never written anywhere), retries, timeouts and concurrency.
//!
//! Never: imports `family`, `compile`, `sandbox` or `grade`. A provider, simulated or
//! real, sees exactly what a model would see — the messages and the tool schemas — and
//! nothing of the compiled answer, the reference program or the grader. This is
//! structural: nothing in this module tree can name those types.

// WIRE CLIENTS: uncomment when src/provider/{openai,anthropic,gemini}.rs exist.
pub mod anthropic;
pub mod chat;
pub mod config;
pub mod gemini;
mod http;
pub mod openai;
pub mod retry;
// SIM: uncomment when src/provider/sim/mod.rs exists.
pub mod sim;
pub mod tokens;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

pub use chat::{
    ChatRequest, ChatResponse, Finish, Message, ReasoningSource, ToolCall, ToolSchema, Usage,
};
pub use config::{Catalogue, Configuration, ProviderKind};

/// A boxed future, so that providers can sit behind `dyn Provider`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One model behind one route.
pub trait Provider: Send + Sync {
    /// Sends one request and returns the response, or why there is none.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;

    /// The sampling fields the wire body of `request` carries: read back from the body
    /// the client builds, so a field the protocol drops (Anthropic's seed, Gemini's
    /// `parallel_tool_calls`) or reduces (a seed modulo the API's integer range) shows
    /// as sent. The default, for providers without a wire (the simulated panel), is the
    /// request's own settings: what its configuration would send.
    fn wire_sampling(&self, request: &ChatRequest) -> chat::Sampling {
        request.sampling
    }

    /// Checks credentials and reachability without spending tokens where the protocol
    /// allows (listing models, say). The default sends nothing and reports success.
    fn check<'a>(&'a self) -> BoxFuture<'a, Result<String, ProviderError>> {
        Box::pin(async { Ok("nothing to check".to_string()) })
    }
}

/// Why a request produced no response.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ProviderError {
    /// The configuration names a key variable that is not set.
    #[error("configuration {config} needs the environment variable {env}, which is not set")]
    MissingKey {
        /// Configuration name.
        config: String,
        /// The variable.
        env: String,
    },
    /// The configuration cannot be used (bad base URL, bad sim parameters, ...).
    #[error("configuration {config}: {message}")]
    Config {
        /// Configuration name.
        config: String,
        /// What is wrong.
        message: String,
    },
    /// A non-success HTTP status.
    #[error("HTTP {status}: {body}")]
    Http {
        /// Status code.
        status: u16,
        /// The start of the body (never containing the key).
        body: String,
        /// `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// No response within the configured timeout.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The connection failed.
    #[error("transport error: {0}")]
    Transport(String),
    /// A success status whose body is not the protocol's JSON.
    #[error("cannot decode the response: {message}")]
    Decode {
        /// The status the body came with, when there was one.
        status: Option<u16>,
        /// What is wrong with it.
        message: String,
    },
    /// Retries ran out; the episode is an infrastructure failure.
    #[error("gave up after {attempts} attempts: {last}")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        last: Box<ProviderError>,
    },
}

impl ProviderError {
    /// The HTTP status the error came with, if a response came at all.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Http { status, .. } => Some(*status),
            ProviderError::Decode { status, .. } => *status,
            ProviderError::Exhausted { last, .. } => last.status(),
            _ => None,
        }
    }

    /// A `Decode` error that knows no status yet gets `status`; others are unchanged.
    pub(crate) fn at_status(self, status: u16) -> ProviderError {
        match self {
            ProviderError::Decode {
                status: None,
                message,
            } => ProviderError::Decode {
                status: Some(status),
                message,
            },
            other => other,
        }
    }
}

/// Reads a configuration's key from the environment. A missing key is an error before
/// any episode starts; the key itself is never logged or stored.
pub fn api_key(config: &Configuration) -> Result<Option<String>, ProviderError> {
    let Some(env) = &config.api_key_env else {
        return Ok(None);
    };
    match std::env::var(env) {
        Ok(k) if !k.is_empty() => Ok(Some(k)),
        _ => Err(ProviderError::MissingKey {
            config: config.name.clone(),
            env: env.clone(),
        }),
    }
}

/// Builds the provider a configuration describes.
pub fn build(config: &Configuration) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(match config.provider {
        ProviderKind::Sim => Arc::new(sim::SimAgent::new(config)?),
        ProviderKind::Openai => Arc::new(openai::OpenAi::new(config, api_key(config)?)?),
        ProviderKind::Anthropic => Arc::new(anthropic::Anthropic::new(config, api_key(config)?)?),
        ProviderKind::Gemini => Arc::new(gemini::Gemini::new(config, api_key(config)?)?),
    })
}

/// Installs the ring crypto provider for rustls once per process (reqwest is built
/// without a default provider to avoid aws-lc's C build).
pub fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
