//! Token counting with a real tokenizer (tiktoken's `o200k_base`, through tiktoken-rs:
//! the encoding of current OpenAI models, embedded in the crate so no download is
//! needed). Counts are memoised by content hash, so each tool schema and each message
//! is encoded once per process, not once per request. The hash is XXH3-128 ([`key`]):
//! a memo key, not a seed, hashed for every message of every request, where blake3
//! cost a fifth of the simulated panel's CPU.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tiktoken_rs::CoreBPE;

use crate::{Message, ToolSchema};

fn encoder() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

fn cache() -> &'static Mutex<HashMap<u128, u64>> {
    static CACHE: OnceLock<Mutex<HashMap<u128, u64>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The memo key of a text: XXH3-128 (two texts share one with chance 2^-128).
pub fn key(bytes: &[u8]) -> u128 {
    twox_hash::XxHash3_128::oneshot(bytes)
}

/// Tokens of `text` under o200k_base (uncached: for short, one-off text).
pub fn count_uncached(text: &str) -> u64 {
    match encoder() {
        Some(bpe) => bpe.encode_ordinary(text).len() as u64,
        // The encoder is embedded; failing to build it would be a bug in the crate.
        // Fall back to a byte estimate rather than failing an episode.
        None => (text.len() as u64).div_ceil(4),
    }
}

/// Tokens of `text`, memoised by its hash ([`key`]).
pub fn count(text: &str) -> u64 {
    let key = key(text.as_bytes());
    if let Ok(c) = cache().lock() {
        if let Some(&n) = c.get(&key) {
            return n;
        }
    }
    let n = count_uncached(text);
    if let Ok(mut c) = cache().lock() {
        c.insert(key, n);
    }
    n
}

/// Tokens of one message: its content, plus each tool call's name and arguments.
pub fn message(m: &Message) -> u64 {
    match m {
        Message::System { content } | Message::User { content } => count(content),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            content.as_deref().map_or(0, count)
                + tool_calls
                    .iter()
                    .map(|c| count(&c.name) + count(&c.arguments))
                    .sum::<u64>()
        }
        Message::Tool { content, .. } => count(content),
    }
}

/// One tool as offered, the text [`tool`] counts: its name, description and parameters
/// as one JSON object.
pub fn tool_text(schema: &ToolSchema) -> String {
    serde_json::json!({
        "name": schema.name,
        "description": schema.description,
        "parameters": schema.parameters,
    })
    .to_string()
}

/// Tokens of one tool as offered ([`tool_text`]).
pub fn tool(schema: &ToolSchema) -> u64 {
    count(&tool_text(schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_real_tokens_and_memoised() {
        assert_eq!(count_uncached("hello world"), 2);
        let s = "{\"name\": \"nwf_euw_recv_search\"}";
        assert_eq!(count(s), count_uncached(s));
        assert_eq!(count(s), count(s));
        assert!(count_uncached(&"word ".repeat(100)) >= 100);
    }
}
