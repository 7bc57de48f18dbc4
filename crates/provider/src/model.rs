//! `--model PROVIDER/MODEL`: a configuration made for one run from its protocol's
//! defaults, so that aiming tbb at a served model takes a flag, not a catalogue edit.
//!
//! Owns: the spelling of a model flag (`openai/gpt-4.1-mini`, `anthropic/<model>`,
//! `google/<model>` (or `gemini/<model>`), `openai/<model>` with a base URL for any
//! OpenAI-compatible server), the name the configuration gets ([`name_for`]), each
//! protocol's defaults ([`Protocol`]) and the conventional key variables
//! ([`key_variables`]: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or else
//! `GOOGLE_API_KEY`). The result is a plain [`Configuration`], the catalogue's own type:
//! everything downstream (manifest, lockfile, keys, plan, apply, certify) treats it as
//! one more catalogue entry.
//!
//! What a model flag makes depends only on the flag, the base URL and
//! `OPENAI_BASE_URL`, never on which key variables happen to be set: a configuration is
//! part of every episode's key, and setting a key must not change what an episode is.
//!
//! Never: reads a key, or writes one anywhere. A configuration names the variable of its
//! key, never the key.

use thiserror::Error;

use super::config::{
    Configuration, ExecutionProfile, MaxTokensField, Prices, RequestField, RetryPolicy,
    LOCAL_TIMEOUT_MS, REMOTE_TIMEOUT_MS,
};
use super::ProviderKind;
use tbb_diag::names;

/// The variable an `openai/` model's base URL comes from when `--base-url` is not given.
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";

/// Requests in flight on a model flag's route at most (the catalogue's default).
const CONCURRENCY: u32 = 4;

/// A protocol as a model flag names it, with the defaults of its configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    /// How the flag spells it (`openai`), and the prefix of the configuration's name.
    pub prefix: &'static str,
    /// The wire protocol.
    pub kind: ProviderKind,
    /// The organization of its configurations on its own route.
    pub organization: &'static str,
    /// The variable its key is read from.
    pub key_variable: &'static str,
    /// Request fields the protocol does not take.
    pub omit: &'static [RequestField],
}

/// Every protocol a model flag may name, in the order help lists them.
pub const PROTOCOLS: [Protocol; 3] = [
    Protocol {
        prefix: "openai",
        kind: ProviderKind::Openai,
        organization: "OpenAI",
        key_variable: "OPENAI_API_KEY",
        omit: &[],
    },
    Protocol {
        prefix: "anthropic",
        kind: ProviderKind::Anthropic,
        organization: "Anthropic",
        key_variable: "ANTHROPIC_API_KEY",
        // Anthropic Messages has no seed.
        omit: &[RequestField::Seed],
    },
    Protocol {
        prefix: "google",
        kind: ProviderKind::Gemini,
        organization: "Google",
        key_variable: "GEMINI_API_KEY",
        // generateContent has no parallel_tool_calls.
        omit: &[RequestField::ParallelToolCalls],
    },
];

/// Other spellings of a protocol's prefix.
const ALIASES: [(&str, &str); 1] = [("gemini", "google")];

/// Variables read, in order, for a configuration's key variable `env`: the variable
/// itself, then the conventional alternative of Google's clients (`GOOGLE_API_KEY`
/// when `GEMINI_API_KEY` is not set). A catalogue entry naming any other variable reads
/// exactly that one.
pub fn key_variables(env: &str) -> Vec<&str> {
    match env {
        "GEMINI_API_KEY" => vec![env, "GOOGLE_API_KEY"],
        _ => vec![env],
    }
}

/// A model flag that cannot be made into a configuration.
#[derive(Debug, Clone, Error, PartialEq, Eq, miette::Diagnostic)]
pub enum ModelError {
    /// Not `PROVIDER/MODEL`, or an unknown provider.
    #[error("--model {given}: {problem}")]
    #[diagnostic(
        code(tbb::model::spelling),
        help(
            "write --model PROVIDER/MODEL with PROVIDER one of openai, anthropic, google \
             (e.g. --model openai/gpt-4.1-mini; --model openai/NAME --base-url URL for any \
             OpenAI-compatible server)"
        )
    )]
    Spelling {
        /// The flag as given.
        given: String,
        /// What is wrong.
        problem: String,
    },
    /// `--base-url` with a protocol other than OpenAI's.
    #[error("--base-url {url} was given with --model {given}, which is not an openai/ model")]
    #[diagnostic(
        code(tbb::model::base_url),
        help(
            "--base-url names an OpenAI-compatible server for the openai/ models of the run; \
             for another route of this protocol, add a catalogue entry with its `base_url`"
        )
    )]
    BaseUrl {
        /// The flag as given.
        given: String,
        /// The base URL.
        url: String,
    },
    /// `--base-url` (or `OPENAI_BASE_URL`) is not an http(s) URL.
    #[error("the base URL `{url}` (from {from}) is not an http:// or https:// URL")]
    #[diagnostic(
        code(tbb::model::bad_url),
        help("give the server's API root, e.g. http://127.0.0.1:8080/v1")
    )]
    BadUrl {
        /// The URL.
        url: String,
        /// `--base-url` or `OPENAI_BASE_URL`.
        from: String,
    },
    /// The derived name is not an identifier (too long).
    #[error("--model {given}: the configuration's name {problem}")]
    #[diagnostic(
        code(tbb::model::name),
        help(
            "add a catalogue entry with a shorter name for this model and select it in the \
             manifest"
        )
    )]
    Name {
        /// The flag as given.
        given: String,
        /// What breaks the rule.
        problem: String,
    },
    /// Two model flags make configurations of one name.
    #[error("--model {first} and --model {second} both make the configuration `{name}`")]
    #[diagnostic(
        code(tbb::model::twice),
        help("give each model once (names are lowercased, and characters other than letters, digits, `-`, `_` and `.` become `-`)")
    )]
    Twice {
        /// The first flag.
        first: String,
        /// The second flag.
        second: String,
        /// Their name.
        name: String,
    },
}

/// The protocol and model of a flag (`openai/gpt-4.1-mini`); the model may itself hold
/// slashes (`openai/Qwen/Qwen3-8B`).
pub fn parse(given: &str) -> Result<(Protocol, &str), ModelError> {
    let spelling = |problem: String| ModelError::Spelling {
        given: given.to_string(),
        problem,
    };
    let Some((prefix, model)) = given.split_once('/') else {
        return Err(spelling(
            "there is no `/` between the provider and the model".into(),
        ));
    };
    let prefix = ALIASES
        .iter()
        .find(|(alias, _)| *alias == prefix)
        .map_or(prefix, |(_, canonical)| canonical);
    let Some(protocol) = PROTOCOLS.iter().find(|p| p.prefix == prefix) else {
        let known: Vec<&str> = PROTOCOLS.iter().map(|p| p.prefix).collect();
        let hint = names::closest(prefix, known.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(spelling(format!(
            "`{prefix}` is not a provider tbb speaks{hint}"
        )));
    };
    if model.trim().is_empty() {
        return Err(spelling("the model is empty".into()));
    }
    if model.chars().any(char::is_control) {
        return Err(spelling("the model holds a control character".into()));
    }
    Ok((*protocol, model))
}

/// The configuration name of a model flag: `PREFIX-MODEL`, lowercased, with every
/// character other than a letter, a digit, `-`, `_` or `.` made a `-`
/// (`openai/gpt-4.1-mini` -> `openai-gpt-4.1-mini`, `openai/Qwen/Qwen3-8B` ->
/// `openai-qwen-qwen3-8b`), so it is an identifier like every configuration name.
pub fn name_for(protocol: &Protocol, model: &str) -> String {
    let model: String = model
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{}-{model}", protocol.prefix)
}

/// The configuration of one model flag. `base_url` is `--base-url`; `env` reads the
/// process's variables (only [`OPENAI_BASE_URL`]).
///
/// Defaults: the protocol's route, key variable and profile; no prices (0 USD: the plan
/// estimates requests, not cost); the catalogue's retry policy and concurrency. An
/// `openai/` model with a base URL speaks to an OpenAI-compatible server: its cap field
/// is `max_tokens` (what such servers take), and a server on this machine is sent the
/// key only when its variable is set ([`Configuration::api_key_optional`]: local servers
/// take none unless started with one) and has the organization `Local`.
pub fn configuration(
    given: &str,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Configuration, ModelError> {
    let (protocol, model) = parse(given)?;
    let base_url = match (protocol.kind, base_url) {
        (ProviderKind::Openai, Some(url)) => Some((url.to_string(), "--base-url")),
        (ProviderKind::Openai, None) => env(OPENAI_BASE_URL)
            .filter(|u| !u.is_empty())
            .map(|u| (u, OPENAI_BASE_URL)),
        (_, Some(url)) => {
            return Err(ModelError::BaseUrl {
                given: given.to_string(),
                url: url.to_string(),
            })
        }
        (_, None) => None,
    };
    if let Some((url, from)) = &base_url {
        let scheme_ok = reqwest::Url::parse(url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
        if !scheme_ok {
            return Err(ModelError::BadUrl {
                url: url.clone(),
                from: (*from).to_string(),
            });
        }
    }
    let name = name_for(&protocol, model);
    if let Err(e) = names::check(&name) {
        return Err(ModelError::Name {
            given: given.to_string(),
            problem: e.why,
        });
    }
    let mut config = Configuration {
        name,
        organization: protocol.organization.to_string(),
        provider: protocol.kind,
        model: model.to_string(),
        version: None,
        quantization: None,
        base_url: base_url.map(|(url, _)| url.trim_end_matches('/').to_string()),
        api_key_env: Some(protocol.key_variable.to_string()),
        api_key_optional: false,
        prices: Prices {
            input_per_mtok: 0.0,
            output_per_mtok: 0.0,
        },
        profile: ExecutionProfile {
            omit: protocol.omit.iter().copied().collect(),
            ..ExecutionProfile::default()
        },
        retry: RetryPolicy::default(),
        concurrency: CONCURRENCY,
        max_infra_failures: None,
        timeout_ms: REMOTE_TIMEOUT_MS,
        context_window: None,
        enabled: true,
        sim: None,
        speed: None,
    };
    if config.base_url.is_some() {
        config.profile.max_tokens_field = MaxTokensField::MaxTokens;
    }
    if config.is_local() {
        config.organization = "Local".to_string();
        config.api_key_optional = true;
        config.timeout_ms = LOCAL_TIMEOUT_MS;
    }
    Ok(config)
}

/// The configurations of a run's model flags, in the order given; two flags making one
/// name are refused.
pub fn configurations(
    given: &[String],
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Configuration>, ModelError> {
    let mut out: Vec<(String, Configuration)> = Vec::new();
    for flag in given {
        let config = configuration(flag, base_url, env)?;
        if let Some((first, _)) = out.iter().find(|(_, c)| c.name == config.name) {
            return Err(ModelError::Twice {
                first: first.clone(),
                second: flag.clone(),
                name: config.name,
            });
        }
        out.push((flag.clone(), config));
    }
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_flag_names_its_configuration_after_the_provider_and_the_model() {
        let c = configuration("openai/gpt-4.1-mini", None, &no_env).expect("valid");
        assert_eq!(c.name, "openai-gpt-4.1-mini");
        assert_eq!(c.model, "gpt-4.1-mini");
        assert_eq!(c.provider, ProviderKind::Openai);
        assert_eq!(c.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(c.base_url, None);
        assert_eq!(
            c.profile.max_tokens_field,
            MaxTokensField::MaxCompletionTokens
        );
        let q = configuration("openai/Qwen/Qwen3-8B:Q4", None, &no_env).expect("valid");
        assert_eq!(q.name, "openai-qwen-qwen3-8b-q4");
        assert_eq!(q.model, "Qwen/Qwen3-8B:Q4");
    }

    #[test]
    fn each_protocol_takes_its_key_variable_and_profile() {
        let a = configuration("anthropic/claude-3-5-haiku-20241022", None, &no_env).expect("ok");
        assert_eq!(a.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert!(a.profile.omit.contains(&RequestField::Seed));
        for spelling in ["google/gemini-2.5-flash", "gemini/gemini-2.5-flash"] {
            let g = configuration(spelling, None, &no_env).expect("ok");
            assert_eq!(g.name, "google-gemini-2.5-flash");
            assert_eq!(g.provider, ProviderKind::Gemini);
            assert_eq!(g.api_key_env.as_deref(), Some("GEMINI_API_KEY"));
        }
        assert_eq!(
            key_variables("GEMINI_API_KEY"),
            ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
        );
        assert_eq!(key_variables("MY_KEY"), ["MY_KEY"]);
    }

    #[test]
    fn a_base_url_makes_an_openai_compatible_route_and_a_local_one_takes_no_key() {
        let env =
            |name: &str| (name == OPENAI_BASE_URL).then(|| "http://127.0.0.1:8080/v1/".into());
        let local = configuration("openai/smol", None, &env).expect("ok");
        assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(local.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert!(local.api_key_optional);
        assert_eq!(local.organization, "Local");
        assert_eq!(local.timeout_ms, LOCAL_TIMEOUT_MS);
        assert_eq!(local.profile.max_tokens_field, MaxTokensField::MaxTokens);
        let flag =
            configuration("openai/m", Some("https://llm.example.test/v1"), &env).expect("ok");
        assert_eq!(
            flag.base_url.as_deref(),
            Some("https://llm.example.test/v1")
        );
        assert_eq!(flag.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert!(!flag.api_key_optional);
        assert!(matches!(
            configuration("anthropic/m", Some("http://127.0.0.1:1"), &no_env),
            Err(ModelError::BaseUrl { .. })
        ));
        assert!(matches!(
            configuration("openai/m", Some("ftp://x"), &no_env),
            Err(ModelError::BadUrl { .. })
        ));
    }

    #[test]
    fn misspelt_or_colliding_flags_are_refused() {
        for bad in ["gpt-4.1-mini", "opnai/gpt", "openai/", "openai/ "] {
            assert!(
                matches!(
                    configuration(bad, None, &no_env),
                    Err(ModelError::Spelling { .. })
                ),
                "{bad}"
            );
        }
        let long = format!("openai/{}", "m".repeat(80));
        assert!(matches!(
            configuration(&long, None, &no_env),
            Err(ModelError::Name { .. })
        ));
        let twice = configurations(&["openai/M".into(), "openai/m".into()], None, &no_env);
        assert!(matches!(twice, Err(ModelError::Twice { .. })));
    }
}
