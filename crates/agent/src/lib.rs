//! What an agent may use: the chat types ([`chat`]), the [`Provider`] trait every model
//! behind a route implements, token counting ([`tokens`]), the simulated panel
//! ([`sim`]), the blind discovery mechanisms — the retrieval menu and the
//! connector-first router ([`discovery`]) — and the public-handoff controller
//! ([`controller`]).
//!
//! Owns: the boundary between the harness and whatever answers a request — a
//! [`chat::ChatRequest`] in, a [`chat::ChatResponse`] or a [`ProviderError`] out.
//!
//! Never: depends on the core crate (families, compiler, sandbox, grader). This is the
//! wall that keeps agents blind: a simulated agent, the router and the
//! controller see exactly what a model would see — the messages and the tool
//! schemas — and `cargo build` refuses any code here that names a compiled answer, a
//! reference program or a grade, because this crate cannot reach the types.
#![warn(missing_docs)]

pub mod chat;
pub mod controller;
pub mod discovery;
pub mod sim;
pub mod tokens;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use thiserror::Error;

pub use chat::{
    ChatRequest, ChatResponse, Finish, Message, ReasoningSource, ToolCall, ToolSchema, Usage,
};

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
    pub fn at_status(self, status: u16) -> ProviderError {
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
