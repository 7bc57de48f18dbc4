//! HTTP plumbing shared by the three wire clients: building the reqwest client, sending
//! one JSON request, and turning what comes back into JSON or a typed
//! [`ProviderError`].
//!
//! Owns: status handling (`Http` with a body snippet and `Retry-After`), `Timeout`,
//! `Transport` and `Decode` errors, and keeping the key and terminal controls out of all
//! of them.
//!
//! Invariants: the key lives in a [`Secret`] (whose `Debug` prints nothing of it) and in
//! reqwest's default headers, marked sensitive; error bodies are cut to
//! [`SNIPPET_CHARS`] characters *after* every occurrence of the key has been replaced,
//! so no cut can leave a prefix of it; request headers are never echoed; redirects are
//! not followed (they would carry the key elsewhere). A response
//! body that contains the key (a server echoing it) has the key replaced in every
//! string before it is returned as `raw`.
//!
//! Never: retries (that is [`super::retry`]), logs, or reads the environment.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde_json::{Map, Value as Json};

use super::chat::{ToolSchema, Usage};
use super::config::Configuration;
use super::menu_memo::{Memoised, MenuMemo};
use super::ProviderError;

/// Characters of a response body kept in an error.
pub(crate) const SNIPPET_CHARS: usize = 300;

/// What replaces the key wherever a server echoed it.
pub(crate) const REDACTED: &str = "[redacted]";

/// Keys shorter than this are placeholders of local servers ("EMPTY", "ollama"), not
/// secrets; redacting them would mangle ordinary words in error bodies.
const MIN_SECRET_LEN: usize = 8;

/// An API key. `Debug` and `Display` never show it.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(key: String) -> Secret {
        Secret(key)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every occurrence of the key in `text`.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < MIN_SECRET_LEN {
            return text.to_string();
        }
        text.replace(&self.0, REDACTED)
    }

    fn occurs_in(&self, text: &str) -> bool {
        self.0.len() >= MIN_SECRET_LEN && text.contains(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// The key of a protocol that always needs one; its absence is
/// [`ProviderError::MissingKey`].
pub(crate) fn required_key(
    config: &Configuration,
    api_key: Option<String>,
) -> Result<Secret, ProviderError> {
    match api_key {
        Some(k) if !k.is_empty() => Ok(Secret::new(k)),
        _ => Err(ProviderError::MissingKey {
            config: config.name.clone(),
            env: config.api_key_env.clone().unwrap_or_else(|| {
                "named by api_key_env (which the configuration does not set)".to_string()
            }),
        }),
    }
}

/// A header value carrying a secret (`prefix` + key), marked sensitive so that reqwest
/// and hyper never print it.
pub(crate) fn secret_header(
    config: &str,
    prefix: &str,
    key: &Secret,
) -> Result<HeaderValue, ProviderError> {
    let mut value = HeaderValue::from_str(&format!("{prefix}{}", key.expose())).map_err(|_| {
        ProviderError::Config {
            config: config.to_string(),
            message: "the API key contains characters that cannot go in an HTTP header".to_string(),
        }
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The base URL of a configuration (or the protocol default), checked.
pub(crate) fn base_url(config: &Configuration, default: &str) -> Result<Url, ProviderError> {
    let text = config.base_url.as_deref().unwrap_or(default);
    let url = Url::parse(text).map_err(|e| ProviderError::Config {
        config: config.name.clone(),
        message: format!("base_url `{text}` is not a URL: {e}"),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(ProviderError::Config {
            config: config.name.clone(),
            message: format!("base_url `{text}` must be an http or https URL"),
        });
    }
    Ok(url)
}

/// `base` with `segments` appended as path segments (a trailing slash on `base` is
/// ignored; segments are percent-encoded where needed).
pub(crate) fn endpoint(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    url
}

/// A reqwest client with the configuration's timeout and the protocol's headers.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    inner: reqwest::Client,
    timeout: Duration,
    key: Option<Secret>,
}

impl Client {
    /// Builds the client. `headers` go on every request (secret ones must already be
    /// marked sensitive); `key` is kept only to redact it from what comes back.
    pub(crate) fn new(
        config: &Configuration,
        headers: Vec<(HeaderName, HeaderValue)>,
        key: Option<Secret>,
    ) -> Result<Client, ProviderError> {
        if config.timeout_ms == 0 {
            return Err(ProviderError::Config {
                config: config.name.clone(),
                message: "timeout_ms must be at least 1".to_string(),
            });
        }
        super::install_crypto();
        let timeout = Duration::from_millis(config.timeout_ms);
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(name, value);
        }
        let mut builder = reqwest::Client::builder();
        let plain_http = config.base_url.as_deref().is_some_and(|u| {
            u.get(..7)
                .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        });
        if plain_http {
            // A route over plain HTTP (a local server) never verifies a certificate, and
            // loading the system's trust store is a noticeable part of a short live
            // study's CPU. An empty store makes any https URL fail verification
            // instead, and none is reached: every URL is built on `base_url` and
            // redirects are refused. (An `https://` proxy in `HTTP_PROXY` would fail
            // its handshake: every request then fails loudly, as an infrastructure
            // failure naming the error.)
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let inner = builder
            .timeout(timeout)
            .default_headers(map)
            // A redirect would carry `x-api-key` / `x-goog-api-key` to wherever it
            // points (reqwest strips only `Authorization` across hosts); none of the
            // APIs redirect, so a 3xx is reported as an `Http` error instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ProviderError::Config {
                config: config.name.clone(),
                message: format!("cannot build the HTTP client: {}", error_chain(&e)),
            })?;
        Ok(Client {
            inner,
            timeout,
            key,
        })
    }

    /// POSTs a JSON body, already serialised ([`with_tools`]), and returns the
    /// response's JSON and (success) status.
    pub(crate) async fn post_json(
        &self,
        url: Url,
        bytes: Vec<u8>,
    ) -> Result<(Json, u16), ProviderError> {
        let request = self
            .inner
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        self.send(request).await
    }

    /// GETs a URL and returns the response's JSON.
    pub(crate) async fn get_json(&self, url: Url) -> Result<Json, ProviderError> {
        Ok(self.send(self.inner.get(url)).await?.0)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<(Json, u16), ProviderError> {
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let text = response.text().await.map_err(|e| self.transport(&e))?;
        let json = interpret(status, retry_after, &text, self.key.as_ref())?;
        Ok((json, status.as_u16()))
    }

    fn transport(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            return ProviderError::Timeout(self.timeout);
        }
        let message = error_chain(e);
        ProviderError::Transport(match &self.key {
            Some(k) => k.redact(&message),
            None => message,
        })
    }
}

/// An error and its sources, joined (reqwest's own message names only the URL).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// A status and a body as the protocol's JSON, or the error they amount to.
pub(crate) fn interpret(
    status: StatusCode,
    retry_after: Option<Duration>,
    text: &str,
    key: Option<&Secret>,
) -> Result<Json, ProviderError> {
    if !status.is_success() {
        return Err(ProviderError::Http {
            status: status.as_u16(),
            body: snippet(text, key),
            retry_after,
        });
    }
    let mut json: Json = serde_json::from_str(text).map_err(|e| ProviderError::Decode {
        status: Some(status.as_u16()),
        message: format!("{e}; the body starts: {}", snippet(text, key)),
    })?;
    if let Some(k) = key.filter(|k| k.occurs_in(text)) {
        scrub(&mut json, k);
    }
    Ok(json)
}

/// Each menu's tool array as one wire format renders it, so that a menu shown in many
/// requests (every request of every episode of a variant) is rendered once: at 128
/// schemas the tool array is most of a request's bytes, and building it as a JSON value
/// for every request was most of the client's time. Menus are found by content
/// ([`MenuMemo`]).
#[derive(Debug, Default)]
pub(crate) struct RenderedMenus(MenuMemo<String>);

impl RenderedMenus {
    /// The rendering of `tools` (`render` is called on a miss only).
    pub(crate) fn get(
        &self,
        tools: &[ToolSchema],
        render: impl FnOnce(&[ToolSchema]) -> Json,
    ) -> Memoised<String> {
        self.0.get(tools, |t| render(t).to_string())
    }

    /// The bytes of `body` with `tools`, rendered once per menu, spliced in as its
    /// `tools` member; without one when the menu is empty.
    pub(crate) fn body(
        &self,
        body: &Map<String, Json>,
        tools: &[ToolSchema],
        render: impl FnOnce(&[ToolSchema]) -> Json,
    ) -> Result<Vec<u8>, ProviderError> {
        let rendered = (!tools.is_empty()).then(|| self.get(tools, render));
        with_tools(body, "tools", rendered.as_ref().map(|r| r.1.as_str()))
    }
}

/// `body` serialised with a member `name` whose value is `value`, JSON already
/// serialised (a rendered tool array), spliced in as the last member; without one
/// when `value` is `None`. The bytes parse to `body` with that member inserted.
pub(crate) fn with_tools(
    body: &Map<String, Json>,
    name: &str,
    value: Option<&str>,
) -> Result<Vec<u8>, ProviderError> {
    let encode = |e: serde_json::Error| ProviderError::Decode {
        status: None,
        message: format!("cannot encode the request: {e}"),
    };
    let mut out = serde_json::to_vec(body).map_err(encode)?;
    let Some(value) = value else {
        return Ok(out);
    };
    out.reserve(value.len() + name.len() + 4);
    // `out` ends with the object's closing brace; the member goes before it.
    out.pop();
    if !body.is_empty() {
        out.push(b',');
    }
    serde_json::to_writer(&mut out, name).map_err(encode)?;
    out.push(b':');
    out.extend_from_slice(value.as_bytes());
    out.push(b'}');
    Ok(out)
}

/// The start of a body for an error message: the key replaced first, then cut to
/// [`SNIPPET_CHARS`] characters, then its terminal controls escaped
/// ([`tbb_diag::terminal::escape_line`]): the body is the server's, and the message is
/// printed in summaries and diagnostics, so it must not be able to drive the terminal.
pub(crate) fn snippet(text: &str, key: Option<&Secret>) -> String {
    let clean = match key {
        Some(k) => k.redact(text),
        None => text.to_string(),
    };
    let mut cut: String = clean.chars().take(SNIPPET_CHARS).collect();
    if cut.len() < clean.len() {
        cut.push('…');
    }
    tbb_diag::terminal::escape_line(&cut).into_owned()
}

/// Refuses a response whose message is not in the assistant's role: a message in
/// another role (`system`, `user`, `tool`) is not the model's answer, so the route has
/// broken its protocol — a `Decode` error, recorded as the infrastructure failure
/// `bad_body`, never graded as what the model said. `role` is the field at `field`
/// (`choices[0].message.role`); a body without the field is left to the rest of the
/// parser (compatible servers omit it, and the protocol's shape decides then).
pub(crate) fn check_role(
    role: Option<&Json>,
    field: &str,
    assistant: &str,
    body: &Json,
) -> Result<(), ProviderError> {
    match role {
        None => Ok(()),
        Some(Json::String(r)) if r == assistant => Ok(()),
        Some(other) => Err(not_protocol(
            &format!(
                "`{field}` is {other}, not \"{assistant}\": a message in another role than the assistant's is not an answer"
            ),
            body,
        )),
    }
}

/// A `Decode` error for a body that is JSON but not the protocol's (its status is
/// added by the caller, which knows it).
pub(crate) fn not_protocol(what: &str, body: &Json) -> ProviderError {
    ProviderError::Decode {
        status: None,
        message: format!(
            "{what}; the body starts: {}",
            snippet(&body.to_string(), None)
        ),
    }
}

fn scrub(value: &mut Json, key: &Secret) {
    match value {
        Json::String(s) if key.occurs_in(s) => *s = key.redact(s),
        Json::Array(items) => items.iter_mut().for_each(|v| scrub(v, key)),
        Json::Object(map) => {
            let names: Vec<String> = map.keys().filter(|k| key.occurs_in(k)).cloned().collect();
            for name in names {
                if let Some(v) = map.remove(&name) {
                    map.insert(key.redact(&name), v);
                }
            }
            map.values_mut().for_each(|v| scrub(v, key));
        }
        _ => {}
    }
}

/// `Retry-After` as delay-seconds (fractions accepted) or an IMF-fixdate HTTP-date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), relative to `now`. A date in the past is zero.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = parse_imf_fixdate(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate.
fn parse_imf_fixdate(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u64
        + 1;
    let year: u64 = year.parse().ok()?;
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !(1..=31).contains(&day) || year < 1970 || *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm), years from 1970 on only.
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3_600 + m * 60 + s)
}

/// The largest token count accepted: 2^53, beyond which a JSON number is no longer
/// exact in the doubles that most servers and every notebook use.
pub(crate) const MAX_COUNT: u64 = 1 << 53;

/// The usage object at `key` of a response body, read by `read`: the usage, or why the
/// body's usage is not usable. An absent or null usage is `(None, None)`: missing, which
/// the harness treats exactly like a usage that is not counts.
pub(crate) fn read_usage(
    raw: &Json,
    key: &str,
    read: impl Fn(&Json) -> Result<Usage, String>,
) -> (Option<Usage>, Option<String>) {
    match raw.get(key) {
        None | Some(Json::Null) => (None, None),
        Some(u @ Json::Object(_)) => match read(u) {
            Ok(usage) => (Some(usage), None),
            Err(why) => (None, Some(why)),
        },
        Some(other) => (
            None,
            Some(format!(
                "`{key}` is not an object: {}",
                snippet(&other.to_string(), None)
            )),
        ),
    }
}

/// A token count the protocol always reports, at `key` of a usage object.
pub(crate) fn count(usage: &Json, key: &str) -> Result<u64, String> {
    count_opt(usage, key)?.ok_or_else(|| format!("usage has no `{key}`"))
}

/// A token count the protocol may leave out (absent or null is `None`). Whatever is
/// there must be a JSON integer from 0 to [`MAX_COUNT`]: a negative, fractional
/// (`12.5`, and `12.0` too: counts are written as integers), huge or non-numeric count
/// is an error, never read as 0.
pub(crate) fn count_opt(usage: &Json, key: &str) -> Result<Option<u64>, String> {
    match usage.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if n <= MAX_COUNT => Ok(Some(n)),
            _ => Err(format!(
                "usage `{key}` is {}, not a token count (an integer from 0 to 2^53)",
                snippet(&value.to_string(), None)
            )),
        },
    }
}

/// The object at `key` (token details), `None` when absent, null or not an object.
pub(crate) fn details<'a>(usage: &'a Json, key: &str) -> Option<&'a Json> {
    usage.get(key).filter(|d| d.is_object())
}

/// A name for the kind of a JSON value, for messages about protocol violations.
pub(crate) fn kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// The arguments of a recorded tool call as a JSON object, for protocols that take
/// parsed arguments (Anthropic `input`, Gemini `args`). Arguments that are not a JSON
/// object (an invalid string the harness chose to answer with an error observation)
/// are replayed as `{}`: these protocols cannot carry a raw string.
pub(crate) fn arguments_object(arguments: &str) -> Json {
    match serde_json::from_str::<Json>(arguments) {
        Ok(v @ Json::Object(_)) => v,
        _ => Json::Object(Default::default()),
    }
}

/// What the three clients' tests of the spliced body share.
#[cfg(test)]
pub(crate) mod splice_check {
    use super::*;
    use crate::chat::{ChatRequest, Message, Sampling, ToolCall};

    /// Checks that what a client sends (`but_tools` with `tools` rendered once and
    /// spliced in) parses to its `request_body`, with and without tools and sampling,
    /// and that a menu is rendered once.
    pub(crate) fn spliced_body_is_the_request_body(
        but_tools: impl Fn(&ChatRequest) -> Map<String, Json>,
        tools: fn(&[ToolSchema]) -> Json,
        request_body: impl Fn(&ChatRequest) -> Json,
    ) {
        let schema = |name: &str| {
            ToolSchema {
            name: name.into(),
            description: format!("The {name} tool."),
            parameters: serde_json::json!({"type": "object", "properties": {"id": {"type": ["string", "null"]}},
                "required": ["id"], "additionalProperties": false}).into(),
        }
        };
        let menus = RenderedMenus::default();
        for (tools_shown, sampling) in [
            (
                vec![schema("a_search"), schema("a_read")],
                Sampling::default(),
            ),
            (
                vec![schema("a_search"), schema("a_read")],
                Sampling {
                    temperature: Some(0.5),
                    seed: Some(u64::MAX),
                    parallel_tool_calls: Some(false),
                },
            ),
            (vec![schema("a_read")], Sampling::default()),
            (Vec::new(), Sampling::default()),
        ] {
            let request = ChatRequest {
                model: "m".into(),
                messages: vec![
                    Message::System {
                        content: "sys".into(),
                    },
                    Message::User {
                        content: "go \"quoted\"".into(),
                    },
                    Message::Assistant {
                        content: None,
                        tool_calls: vec![ToolCall {
                            id: "call_1".into(),
                            name: "a_read".into(),
                            arguments: "{\"id\":\"x\"}".into(),
                        }],
                    },
                    Message::Tool {
                        call_id: "call_1".into(),
                        name: "a_read".into(),
                        content: "rec".into(),
                    },
                ],
                tools: tools_shown,
                max_completion_tokens: 64,
                sampling,
            };
            let rendered = (!request.tools.is_empty()).then(|| menus.get(&request.tools, tools));
            let bytes = with_tools(
                &but_tools(&request),
                "tools",
                rendered.as_ref().map(|r| r.1.as_str()),
            )
            .expect("encodes");
            let sent: Json = serde_json::from_slice(&bytes).expect("the body is JSON");
            assert_eq!(
                sent,
                request_body(&request),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
            if let Some(r) = rendered {
                let again = menus.get(&request.tools, |_| panic!("rendered twice"));
                assert!(std::sync::Arc::ptr_eq(&r, &again));
            }
        }
        assert_eq!(menus.0.len(), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_tools_splices_a_member_into_any_object() {
        let mut body = Map::new();
        assert_eq!(with_tools(&body, "tools", None).ok(), Some(b"{}".to_vec()));
        assert_eq!(
            with_tools(&body, "tools", Some("[1]")).ok(),
            Some(b"{\"tools\":[1]}".to_vec())
        );
        body.insert("model".into(), Json::from("m"));
        assert_eq!(
            with_tools(&body, "tools", Some("[]")).ok(),
            Some(b"{\"model\":\"m\",\"tools\":[]}".to_vec())
        );
    }

    const KEY: &str = "sk-test-DO-NOT-LEAK-0123456789";

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 0.25 ", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", UNIX_EPOCH),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Foo 1994 08:49:47 GMT", now),
            None
        );
    }

    #[test]
    fn snippets_are_cut_after_the_key_is_gone() {
        let key = Secret::new(KEY.to_string());
        // The key straddles the cut: redacting first leaves no prefix of it.
        let body = format!("{}{KEY}{}", "x".repeat(290), "y".repeat(100));
        let s = snippet(&body, Some(&key));
        assert!(!s.contains("sk-test"), "{s}");
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 1);
        // Multi-byte characters are cut on a character boundary.
        assert_eq!(
            snippet(&"é".repeat(400), None).chars().count(),
            SNIPPET_CHARS + 1
        );
        assert_eq!(snippet("short", None), "short");
    }

    #[test]
    fn statuses_and_bodies_become_typed_errors() {
        let key = Secret::new(KEY.to_string());
        let html = "<html><body>502 Bad Gateway</body></html>";
        match interpret(StatusCode::BAD_GATEWAY, None, html, Some(&key)) {
            Err(ProviderError::Http {
                status: 502, body, ..
            }) => assert_eq!(body, html),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            interpret(StatusCode::OK, None, html, None),
            Err(ProviderError::Decode { .. })
        ));
        assert!(matches!(
            interpret(StatusCode::OK, None, "{\"a\": [1,", None),
            Err(ProviderError::Decode { .. })
        ));
        let echoed = format!("{{\"error\": \"bad key {KEY}\", \"{KEY}\": 1}}");
        let json = interpret(StatusCode::OK, None, &echoed, Some(&key)).expect("json");
        assert!(!json.to_string().contains(KEY));
        let err = interpret(StatusCode::UNAUTHORIZED, None, &echoed, Some(&key)).expect_err("401");
        assert!(!err.to_string().contains(KEY) && !format!("{err:?}").contains(KEY));
        assert_eq!(format!("{key:?}"), "Secret([redacted])");
    }

    #[test]
    fn endpoints_append_segments_to_any_base() {
        for base in ["http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/"] {
            let url = Url::parse(base).expect("url");
            assert_eq!(
                endpoint(&url, &["chat", "completions"]).as_str(),
                "http://127.0.0.1:8080/v1/chat/completions"
            );
        }
        let url = Url::parse("https://example.test/v1beta").expect("url");
        assert_eq!(
            endpoint(&url, &["models", "gemini-2.5-flash:generateContent"]).as_str(),
            "https://example.test/v1beta/models/gemini-2.5-flash:generateContent"
        );
    }

    #[test]
    fn counts_are_integers_from_zero_to_two_to_the_53() {
        let u = serde_json::json!({
            "ok": 12, "zero": 0, "max": MAX_COUNT, "null": null,
            "negative": -5, "fraction": 12.5, "integral_float": 12.0,
            "huge": MAX_COUNT + 1, "u64_max": u64::MAX, "exponent": 1e300,
            "string": "12", "bool": true, "object": {"n": 1},
        });
        assert_eq!(count(&u, "ok"), Ok(12));
        assert_eq!(count(&u, "zero"), Ok(0));
        assert_eq!(count(&u, "max"), Ok(MAX_COUNT));
        assert_eq!(count_opt(&u, "null"), Ok(None));
        assert_eq!(count_opt(&u, "absent"), Ok(None));
        assert!(count(&u, "absent").is_err_and(|e| e.contains("no `absent`")));
        assert!(count(&u, "null").is_err());
        for bad in [
            "negative",
            "fraction",
            "integral_float",
            "huge",
            "u64_max",
            "exponent",
            "string",
            "bool",
            "object",
        ] {
            let error = count_opt(&u, bad).expect_err(bad);
            assert!(error.contains(bad), "{error}");
        }
        let read = |u: &Json| -> Result<Usage, String> {
            Ok(Usage {
                input_tokens: count(u, "n")?,
                cached_tokens: 0,
                output_tokens: 0,
                reasoning_tokens: None,
                reasoning_source: super::super::ReasoningSource::Unknown,
            })
        };
        assert!(read_usage(&serde_json::json!({}), "usage", read) == (None, None));
        assert!(read_usage(&serde_json::json!({"usage": null}), "usage", read) == (None, None));
        let (usage, why) = read_usage(&serde_json::json!({"usage": [1]}), "usage", read);
        assert!(usage.is_none() && why.is_some_and(|w| w.contains("not an object")));
        let (usage, why) = read_usage(&serde_json::json!({"usage": {"n": -1}}), "usage", read);
        assert!(usage.is_none() && why.is_some_and(|w| w.contains("-1")));
        let (usage, why) = read_usage(&serde_json::json!({"usage": {"n": 3}}), "usage", read);
        assert_eq!((usage.map(|u| u.input_tokens), why), (Some(3), None));
    }

    #[test]
    fn arguments_that_are_not_objects_replay_as_empty_objects() {
        assert_eq!(
            arguments_object("{\"id\": \"rec_1\"}"),
            serde_json::json!({"id": "rec_1"})
        );
        assert_eq!(arguments_object("{\"id\": \"rec_"), serde_json::json!({}));
        assert_eq!(arguments_object("[1]"), serde_json::json!({}));
    }
}
