//! What the system prompt asks of the agent, recognised by what an instruction means,
//! not by one sentence of one prompt file.
//!
//! Two instructions change how the simulated agent works:
//!
//! - **Checks before each call** (what the workflow prompt asks). A clause — text
//!   between `.`, `;` and `:` — asks for it when it names a moment before every call
//!   (one of [`BEFORE_EACH_CALL`], followed within the clause by a word for a call,
//!   [`CALL_WORDS`]) and a checking verb ([`CHECK_VERBS`]). What it demands is the
//!   number of things it asks to check: the items listed after the verb, split at
//!   commas, "and" and "or" (at least one). The mechanisms scale the extra reasoning
//!   and the care it buys with that number ([`super::mechanisms`]).
//! - **A reading guide** (what the interface-guide prompt gives). A clause explains a
//!   record layout when it says where that layout keeps its values in the interface's
//!   own words ([`LAYOUT_WORDS`]): raw records under `payload`; typed and linked ones
//!   under `fields`; compact ones as rows in `field_dictionary` order. What it demands
//!   is the set of layouts it explains: the guide relieves misreads of those layouts
//!   only.
//!
//! The phrasings are a small, fixed vocabulary, listed here so that a reader can see
//! what the agent understands; `tests/it/sim.rs` reads every file of `prompts/` with
//! them and checks that rewording an instruction keeps its effect. They live with the
//! agent rather than beside the prompts because they are the agent's understanding,
//! part of its behaviour and of its code version.
//!
//! Never: compares a prompt with a known file, or reads anything but the system text.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::observe::Layout;

/// Phrases that put an instruction before every call (lower case).
pub const BEFORE_EACH_CALL: &[&str] = &[
    "before each",
    "before every",
    "before any",
    "before calling",
    "before you call",
    "before making",
    "before using",
    "prior to each",
    "prior to every",
    "prior to any",
    "prior to calling",
    "prior to making",
    "ahead of each",
    "ahead of every",
    "ahead of any",
    "each time before",
    "every time before",
];

/// Words that name a call, one of which must follow the moment in the same clause.
pub const CALL_WORDS: &[&str] = &["tool", "call", "function"];

/// Verbs that ask for a check (lower case; whole words).
pub const CHECK_VERBS: &[&str] = &[
    "check",
    "verify",
    "confirm",
    "make sure",
    "ensure",
    "double-check",
    "validate",
    "review",
];

/// For each layout, the words a clause must hold to explain where its values are
/// (all of one of the alternatives).
pub const LAYOUT_WORDS: &[(Layout, &[&[&str]])] = &[
    (Layout::Raw, &[&["raw", "payload"]]),
    (Layout::Typed, &[&["typed", "fields"]]),
    (
        Layout::Linked,
        &[&["linked", "fields"], &["linked", "links"]],
    ),
    (
        Layout::Compact,
        &[&["field_dictionary"], &["compact", "row"]],
    ),
];

/// What the system prompt asks, as the agent understands it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Instructions {
    /// Things to check before each call (0: no such instruction).
    pub checks_per_call: u32,
    /// The layouts whose reading the prompt explains.
    pub explained: Explained,
}

/// A set of record layouts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Explained {
    raw: bool,
    compact: bool,
    typed: bool,
    linked: bool,
}

impl Explained {
    /// Every layout.
    pub const ALL: Explained = Explained {
        raw: true,
        compact: true,
        typed: true,
        linked: true,
    };

    fn slot(&mut self, layout: Layout) -> &mut bool {
        match layout {
            Layout::Raw => &mut self.raw,
            Layout::Compact => &mut self.compact,
            Layout::Typed => &mut self.typed,
            Layout::Linked => &mut self.linked,
        }
    }

    /// Whether `layout` is explained.
    pub fn contains(&self, layout: Layout) -> bool {
        match layout {
            Layout::Raw => self.raw,
            Layout::Compact => self.compact,
            Layout::Typed => self.typed,
            Layout::Linked => self.linked,
        }
    }

    /// Whether no layout is explained.
    pub fn is_empty(&self) -> bool {
        *self == Explained::default()
    }
}

impl Instructions {
    /// Reads the instructions of a system text, once per process for each text (a study
    /// sends a handful of system prompts, each with every request).
    pub fn read(system: &str) -> Instructions {
        type Memo = Mutex<HashMap<u128, Instructions>>;
        static MEMO: OnceLock<Memo> = OnceLock::new();
        let memo = MEMO.get_or_init(Memo::default);
        let key = crate::tokens::key(system.as_bytes());
        if let Some(known) = memo.lock().ok().and_then(|m| m.get(&key).copied()) {
            return known;
        }
        let read = Instructions::read_uncached(system);
        if let Ok(mut m) = memo.lock() {
            m.insert(key, read);
        }
        read
    }

    fn read_uncached(system: &str) -> Instructions {
        let text = system.to_lowercase();
        let mut out = Instructions::default();
        for clause in text.split(['.', ';', ':', '\n']) {
            out.checks_per_call = out.checks_per_call.max(checks_asked(clause));
            for (layout, alternatives) in LAYOUT_WORDS {
                if alternatives
                    .iter()
                    .any(|words| words.iter().all(|w| has_word(clause, w)))
                {
                    *out.explained.slot(*layout) = true;
                }
            }
        }
        out
    }
}

/// The checks one clause asks for before each call (0 when it asks none).
fn checks_asked(clause: &str) -> u32 {
    let Some(moment) = BEFORE_EACH_CALL
        .iter()
        .filter_map(|m| clause.find(m).map(|at| (at, at + m.len())))
        .min()
    else {
        return 0;
    };
    if !CALL_WORDS.iter().any(|w| clause[moment.0..].contains(w)) {
        return 0;
    }
    let Some(verb_end) = CHECK_VERBS
        .iter()
        .filter_map(|v| word_at(clause, v).map(|at| (at, at + v.len())))
        .min()
        .map(|(_, end)| end)
    else {
        return 0;
    };
    // The listed items follow the verb; a moment written after them ends the list.
    let mut items = &clause[verb_end..];
    if moment.0 >= verb_end {
        items = &clause[verb_end..moment.0];
    }
    let listed = items
        .split(',')
        .flat_map(|part| part.split(" and "))
        .flat_map(|part| part.split(" or "))
        .filter(|item| item.chars().any(char::is_alphabetic))
        .count();
    u32::try_from(listed.max(1)).unwrap_or(u32::MAX)
}

/// Where `word` starts in `text` as a whole word (not inside a longer word).
fn word_at(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let boundary = |i: Option<usize>| {
        i.and_then(|i| bytes.get(i))
            .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
    };
    text.match_indices(word)
        .map(|(at, _)| at)
        .find(|&at| boundary(at.checked_sub(1)) && boundary(Some(at + word.len())))
}

fn has_word(text: &str, word: &str) -> bool {
    word_at(text, word).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_before_each_call_is_counted_by_what_it_lists() {
        let read = |s: &str| Instructions::read(s).checks_per_call;
        assert_eq!(
            read(
                "Before each tool request, check privately the connector, the operation, \
                 the exact arguments and what the task still requires; after the last tool, \
                 check the evidence."
            ),
            4
        );
        assert_eq!(
            read(
                "Before every tool request, privately verify the connector, operation, exact \
                 arguments, and remaining public obligations."
            ),
            4
        );
        assert_eq!(
            read("Prior to calling any tool, confirm the connector and the arguments."),
            2
        );
        assert_eq!(read("Verify the arguments before each function call."), 1);
        assert_eq!(read("Always double-check before any tool call."), 1);
    }

    #[test]
    fn checks_need_a_moment_a_call_and_a_verb() {
        let read = |s: &str| Instructions::read(s).checks_per_call;
        // No moment before each call.
        assert_eq!(
            read("Check the evidence and the final state before you answer."),
            0
        );
        // A moment, but no call.
        assert_eq!(read("Before each answer, check the schema."), 0);
        // A moment and a call, but nothing to check.
        assert_eq!(read("Before each tool call, think."), 0);
        // "checking" inside another word is not the verb.
        assert_eq!(read("Before each call, rechecked items are kept."), 0);
    }

    #[test]
    fn a_guide_explains_the_layouts_it_names() {
        let i = Instructions::read(
            "Read returned records by their interface: raw records keep their values under \
             payload; typed and linked records keep their values under fields; compact \
             records list field names once in field_dictionary.",
        );
        assert_eq!(i.explained, Explained::ALL);
        let only_raw = Instructions::read("Raw records hold their values in payload.");
        assert!(only_raw.explained.contains(Layout::Raw));
        assert!(!only_raw.explained.contains(Layout::Compact));
        assert!(Instructions::read("Work step by step with the tools.")
            .explained
            .is_empty());
    }
}
