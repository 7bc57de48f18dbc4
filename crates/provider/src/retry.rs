//! Retries with exponential backoff and jitter, honouring `Retry-After`, and the
//! per-route concurrency limit.
//!
//! Backoff jitter is drawn from ChaCha seeded by the request's model and conversation
//! (hashed only once a retry is needed, never on the happy path), so a rerun waits the
//! same way; waiting never enters a result.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Semaphore;

use super::config::{Configuration, RetryPolicy, Retryable};
use super::{ChatRequest, ChatResponse, Provider, ProviderError};

/// Which retryable class an error belongs to, if any.
pub fn classify(error: &ProviderError) -> Option<Retryable> {
    match error {
        ProviderError::Http { status: 429, .. } => Some(Retryable::RateLimited),
        ProviderError::Http { status, .. } if *status >= 500 => Some(Retryable::ServerError),
        ProviderError::Timeout(_) => Some(Retryable::Timeout),
        ProviderError::Transport(_) => Some(Retryable::Transport),
        _ => None,
    }
}

/// The wait before retry number `retry` (1-based): `Retry-After` when the error carries
/// one, else `base * 2^(retry-1)` with full jitter; never more than `max_delay_ms`.
pub fn backoff(
    policy: &RetryPolicy,
    retry: u32,
    error: &ProviderError,
    rng: &mut ChaCha8Rng,
) -> Duration {
    let cap = Duration::from_millis(policy.max_delay_ms);
    if let ProviderError::Http {
        retry_after: Some(after),
        ..
    } = error
    {
        return (*after).min(cap);
    }
    let exp = policy
        .base_delay_ms
        .saturating_mul(1u64 << retry.saturating_sub(1).min(20));
    let ceiling = exp.min(policy.max_delay_ms);
    Duration::from_millis(rng.random_range(ceiling / 2..=ceiling.max(1)))
}

/// The outcome of a request under a retry policy.
#[derive(Debug)]
pub struct Attempted {
    /// The response, or the final error (`Exhausted` when retries ran out).
    pub result: Result<ChatResponse, ProviderError>,
    /// Attempts made.
    pub attempts: u32,
    /// The HTTP status of the last attempt that got a response, even when a later one
    /// got none (a 500, then a timeout); `None` when no attempt got one.
    pub last_status: Option<u16>,
}

/// Sends a request, retrying what the policy says may be retried.
pub async fn send_with_retry(
    provider: &dyn Provider,
    policy: &RetryPolicy,
    request: &ChatRequest,
) -> Attempted {
    let mut rng: Option<ChaCha8Rng> = None;
    let mut attempts = 0;
    let mut last_status = None;
    loop {
        attempts += 1;
        let error = match provider.chat(request).await {
            Ok(response) => {
                return Attempted {
                    last_status: response.http_status.or(last_status),
                    result: Ok(response),
                    attempts,
                }
            }
            Err(e) => e,
        };
        last_status = error.status().or(last_status);
        let retryable = classify(&error).is_some_and(|c| policy.retry_on.contains(&c));
        if !retryable {
            return Attempted {
                result: Err(error),
                attempts,
                last_status,
            };
        }
        if attempts >= policy.max_attempts {
            return Attempted {
                result: Err(ProviderError::Exhausted {
                    attempts,
                    last: Box::new(error),
                }),
                attempts,
                last_status,
            };
        }
        let rng = rng.get_or_insert_with(|| {
            let conversation = serde_json::to_string(&request.messages).unwrap_or_default();
            let seed = blake3::hash(format!("{}\0{conversation}", request.model).as_bytes());
            ChaCha8Rng::from_seed(*seed.as_bytes())
        });
        tokio::time::sleep(backoff(policy, attempts, &error, rng)).await;
    }
}

/// One semaphore per route, sized by the first configuration that names the route.
#[derive(Debug, Default, Clone)]
pub struct RouteLimits {
    routes: Arc<Mutex<BTreeMap<String, Arc<Semaphore>>>>,
}

impl RouteLimits {
    /// The semaphore of a configuration's route.
    pub fn for_config(&self, config: &Configuration) -> Arc<Semaphore> {
        let mut routes = match self.routes.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        routes
            .entry(config.route())
            .or_insert_with(|| Arc::new(Semaphore::new(config.concurrency as usize)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_under_the_cap_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base_delay_ms: 100,
            max_delay_ms: 1_000,
            retry_on: Default::default(),
        };
        let mut rng = ChaCha8Rng::from_seed([0; 32]);
        let transport = ProviderError::Transport("reset".into());
        for (retry, ceiling) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1_000),
            (9, 1_000),
        ] {
            let d = backoff(&policy, retry, &transport, &mut rng).as_millis() as u64;
            assert!(d >= ceiling / 2 && d <= ceiling, "retry {retry}: {d}");
        }
        let limited = ProviderError::Http {
            status: 429,
            body: String::new(),
            retry_after: Some(Duration::from_millis(250)),
        };
        assert_eq!(
            backoff(&policy, 1, &limited, &mut rng),
            Duration::from_millis(250)
        );
        assert_eq!(classify(&limited), Some(Retryable::RateLimited));
        assert_eq!(
            classify(&ProviderError::Decode {
                status: Some(200),
                message: "<html>".into()
            }),
            None
        );
    }
}
