//! Tool choice by lexical match: which visible schema a natural-language task asks for.
//!
//! Each schema is scored against the task's words and what they bring to mind
//! ([`super::words::concepts`]): a word in the tool's name counts
//! [`NAME_WEIGHT`], in its description or a parameter's name 1, times the word's
//! weight. A tool whose name begins with a verb the task asks for
//! ([`super::words::verbs`]) gains [`VERB_WEIGHT`]. A tool is relevant when its topical
//! score (without the verb) reaches [`RELEVANT`]; when none is, the task asks for
//! nothing a tool can do.
//!
//! The agent picks the best score, confused as for tbb's searches
//! ([`mechanisms::route_confusion`]): each other relevant tool scoring within
//! [`CLOSE`] of the best is a look-alike pulling with `lookalike_confusion`, and a long
//! menu dilutes attention towards any other tool with `menu_dilution` per 100 schemas.
//! The menu's order plays no part but to break exact ties.
//!
//! Never: knows a tool by name; everything comes from the schema's text.

use rand::{Rng, RngExt};
use serde_json::Value as Json;

use super::words;
use crate::sim::mechanisms::{self, Confusion};
use crate::sim::params::Params;
use crate::ToolSchema;

/// Weight of a word found in a tool's name.
pub const NAME_WEIGHT: f64 = 2.0;
/// Weight of a verb the task asks for at the start of a tool's name.
pub const VERB_WEIGHT: f64 = 3.0;
/// The topical score from which a tool is relevant: one word of its name, or two of
/// its description.
pub const RELEVANT: f64 = 2.0;
/// What each word of a tool's name the task does not bring to mind costs (a tie-break,
/// smaller than any match).
pub const SPECIFICITY: f64 = 0.1;
/// A relevant tool within this share of the best score is a look-alike of the best.
pub const CLOSE: f64 = 0.8;

/// A tool's score for a task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Words of the task found in the tool (weighted).
    pub topical: f64,
    /// The verb bonus.
    pub verb: f64,
    /// Words of the tool's name the task does not bring to mind.
    pub unmatched: usize,
}

impl Score {
    /// Both parts.
    /// Both parts, less [`SPECIFICITY`] per unmatched word of the name: of two tools
    /// the task matches alike, the one whose name says less else is meant.
    pub fn total(&self) -> f64 {
        self.topical + self.verb - SPECIFICITY * self.unmatched as f64
    }
}

/// The tool's words: name, description, parameter names (stems).
pub fn tool_words(t: &ToolSchema) -> (Vec<String>, Vec<String>) {
    let name = words::stems(&t.name);
    let mut rest = words::stems(&t.description);
    if let Some(props) = t.parameters.get("properties").and_then(Json::as_object) {
        for k in props.keys() {
            rest.extend(words::stems(k));
        }
    }
    (name, rest)
}

/// Scores a tool against a text.
pub fn score(t: &ToolSchema, text: &str) -> Score {
    score_with(t, &words::concepts(text), &words::verbs(text))
}

fn score_with(t: &ToolSchema, concepts: &[(String, f64)], verbs: &[&str]) -> Score {
    let (name, rest) = tool_words(t);
    let topical = concepts
        .iter()
        .map(|(c, w)| {
            let found = if name.contains(c) {
                NAME_WEIGHT
            } else if rest.contains(c) {
                1.0
            } else {
                0.0
            };
            found * w
        })
        .sum();
    let first = words::words(&t.name).into_iter().next().unwrap_or_default();
    let verb = if verbs.contains(&first.as_str()) {
        VERB_WEIGHT
    } else {
        0.0
    };
    let verb_stem = words::stem(&first);
    let unmatched = name
        .iter()
        .filter(|w| **w != verb_stem && !concepts.iter().any(|(c, _)| c == *w))
        .count();
    Score {
        topical,
        verb,
        unmatched,
    }
}

/// Every tool's score for a text, in menu order.
pub fn scores(tools: &[ToolSchema], text: &str) -> Vec<Score> {
    let concepts = words::concepts(text);
    let verbs = words::verbs(text);
    tools
        .iter()
        .map(|t| score_with(t, &concepts, &verbs))
        .collect()
}

/// The tool the agent means to use for `text`, by index, and how it chose: `None` when
/// no tool is relevant.
pub fn choose<R: Rng + ?Sized>(
    tools: &[ToolSchema],
    text: &str,
    p: &Params,
    rng: &mut R,
) -> Option<(usize, Confusion)> {
    let s = scores(tools, text);
    let best = (0..s.len()).filter(|&i| s[i].topical >= RELEVANT).fold(
        None,
        |acc: Option<usize>, i| match acc {
            Some(b) if s[b].total() >= s[i].total() => Some(b),
            _ => Some(i),
        },
    )?;
    let close: Vec<usize> = (0..s.len())
        .filter(|&i| {
            i != best && s[i].topical >= RELEVANT && s[i].total() >= CLOSE * s[best].total()
        })
        .collect();
    let other: Vec<usize> = (0..s.len())
        .filter(|&i| i != best && !close.contains(&i))
        .collect();
    let confusion = mechanisms::route_confusion(p, 0, close.len(), other.len(), tools.len(), rng);
    let pick = match confusion {
        Confusion::Lookalike => close[rng.random_range(0..close.len())],
        Confusion::Unrelated => other[rng.random_range(0..other.len())],
        _ => best,
    };
    Some((pick, confusion))
}
