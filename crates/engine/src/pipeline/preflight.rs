//! The preflight of an apply: before the first paid request, every live configuration
//! with episodes to run in this apply is checked with its provider's own
//! [`Provider::check`] (what `tbb providers check` runs: a model listing, no tokens
//! spent), so that a server that is down or a key that is refused stops the run with
//! the route, the cause and the fix, instead of recording every episode as an
//! infrastructure failure.
//!
//! Stops on what makes every request fail: no connection, no answer in time, a refused
//! key (HTTP 401/403, or the key variable unset). Anything else the check meets (a
//! route that serves chat but no model listing, an unexpected listing) is a warning:
//! the route answered, and its requests will say more than its listing can.
//!
//! Never: checks a simulated configuration (it has no server), sends a chat request,
//! or records anything.

use std::sync::Arc;

use tbb_provider::{Configuration, Provider, ProviderError, ProviderKind};

use super::dag::Work;
use super::plan::Plan;
use super::scheduler::{self, Filter};
use super::{PipelineError, Study};

/// What the check of one live configuration found, when it did not stop the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The route answered as expected (the check's own one-line summary).
    Ok {
        /// The configuration.
        config: String,
        /// The check's summary.
        detail: String,
    },
    /// The route answered, but not as the check expected: the run goes on.
    Warning {
        /// The configuration.
        config: String,
        /// What the check met.
        detail: String,
    },
}

/// Why a route stops the run, as the error says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No connection, or no answer within the configuration's timeout.
    Down,
    /// The route refused the key, or the key variable is not set.
    Key,
}

/// Checks every live configuration of `study` with episodes among the plan's nodes
/// this run takes (`filter`), in the manifest's order; `providers` are the study's, one
/// per configuration. Returns what each check found, or the first route that is down
/// or refuses its key.
pub async fn check(
    study: &Study,
    plan: &Plan,
    filter: &dyn Filter,
    providers: &[Arc<dyn Provider>],
) -> Result<Vec<Checked>, PipelineError> {
    let dag = &study.dag;
    let runs = scheduler::selected(dag, plan, filter);
    let mut configs: Vec<usize> = runs
        .iter()
        .filter_map(|&i| match dag.graph[i].work {
            Work::Execute { config, .. } => Some(config),
            _ => None,
        })
        .collect();
    configs.sort_unstable();
    configs.dedup();
    let mut checked = Vec::new();
    for index in configs {
        let (Some(config), Some(provider)) = (
            study.manifest.configurations.get(index),
            providers.get(index),
        ) else {
            continue;
        };
        if config.provider == ProviderKind::Sim {
            continue;
        }
        match provider.check().await {
            Ok(detail) => checked.push(Checked::Ok {
                config: config.name.clone(),
                detail,
            }),
            Err(error) => match refusal(&error) {
                Some(refusal) => return Err(stopped(config, refusal, &error)),
                None => checked.push(Checked::Warning {
                    config: config.name.clone(),
                    detail: error.to_string(),
                }),
            },
        }
    }
    Ok(checked)
}

/// Whether a check's error means no request of the route can succeed.
pub fn refusal(error: &ProviderError) -> Option<Refusal> {
    match error {
        ProviderError::Transport(_) | ProviderError::Timeout(_) => Some(Refusal::Down),
        ProviderError::Http {
            status: 401 | 403, ..
        }
        | ProviderError::MissingKey { .. } => Some(Refusal::Key),
        ProviderError::Exhausted { last, .. } => refusal(last),
        _ => None,
    }
}

/// The error that stops the run at `config`'s route.
fn stopped(config: &Configuration, refusal: Refusal, error: &ProviderError) -> PipelineError {
    let route = config.route();
    let fix = match (refusal, config.api_key_env.as_deref()) {
        (Refusal::Down, _) if config.is_local() => format!(
            "start the server at {route} (docs/local-models.md), or correct `base_url` of \
             `{}` in the catalogue",
            config.name
        ),
        (Refusal::Down, _) => format!(
            "check the network and the route's status, or correct `base_url` of `{}` in the \
             catalogue",
            config.name
        ),
        (Refusal::Key, Some(env)) => format!(
            "set {env} to a key this route accepts (it is the variable `api_key_env` of `{}` \
             names in the catalogue)",
            config.name
        ),
        (Refusal::Key, None) => format!(
            "the route wants a key: name its variable with `api_key_env` for `{}` in the \
             catalogue and set it",
            config.name
        ),
    };
    PipelineError::RouteUnavailable {
        config: config.name.clone(),
        route,
        cause: match refusal {
            Refusal::Down => format!("is down ({error})"),
            Refusal::Key => format!("refuses the key ({error})"),
        },
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dead_route_or_a_refused_key_stops_the_run() {
        let http = |status| ProviderError::Http {
            status,
            body: String::new(),
            retry_after: None,
        };
        assert_eq!(
            refusal(&ProviderError::Transport("connection refused".into())),
            Some(Refusal::Down)
        );
        assert_eq!(
            refusal(&ProviderError::Timeout(std::time::Duration::from_secs(1))),
            Some(Refusal::Down)
        );
        assert_eq!(refusal(&http(401)), Some(Refusal::Key));
        assert_eq!(refusal(&http(403)), Some(Refusal::Key));
        assert_eq!(
            refusal(&ProviderError::Exhausted {
                attempts: 3,
                last: Box::new(http(401)),
            }),
            Some(Refusal::Key)
        );
        // A server without a model listing still serves chat.
        assert_eq!(refusal(&http(404)), None);
        assert_eq!(
            refusal(&ProviderError::Decode {
                status: Some(200),
                message: "not JSON".into(),
            }),
            None
        );
    }
}
