//! `tbb show`: one stored episode, read like a person reads it.
//!
//! Owns: finding an episode of a study ([`locate()`]: a prefix of its key, or selectors on
//! its identity), the view model of one episode ([`EpisodeView`]: the system prompt by
//! name, the user request, every request with its visible tool count, every response
//! with its reasoning tokens, text, tool calls, finish reason and usage, every
//! observation with who issued the call, and the verdict with the limit that fired and
//! the headroom left against each limit), and its two renderings, plain text
//! ([`text`]) and one self-contained HTML page ([`html`]). A played ToolSandbox scenario
//! is shown as text by [`scenario`].
//!
//! An episode's key is its execute node's key: the `transcript_ref` column of
//! `episodes.parquet`, the name of its page (`episodes/<first 12 digits>.html`). A
//! prefix of its grade node's key (`node_key`) finds it too.
//!
//! The view is rebuilt the way `apply`'s regrade and `tbb certify` read an episode:
//! the stored [`ExecutePayload`](crate::pipeline::ExecutePayload) from the cache, its variant compiled again from the
//! families, the trace rebuilt from the transcript and its blobs
//! ([`tbb_harness::transcript::Transcript::trace`]), and the verdict graded again
//! ([`tbb_core::grade::grade_with_budget`]) — no stored verdict is trusted.
//!
//! Never: runs an episode, sends a request, writes to the cache, or decides anything
//! a verdict does not already say (the headroom is the limits minus what the trace
//! used; the infeasibility trigger is the grader's own rule, asked again).

pub mod html;
mod locate;
pub mod matched;
pub mod scenario;
pub mod text;
mod view;

pub use locate::{locate, select, Selector};
pub use view::*;

use std::collections::HashMap;

use petgraph::graph::NodeIndex;
use thiserror::Error;

use crate::pipeline::cache::{Cache, CacheError};
use crate::pipeline::dag::Work;
use crate::pipeline::key::NodeKind;
use crate::pipeline::Study;
use tbb_core::compile::{compile, Variant};
use tbb_core::grade::TerminalFlag;
use tbb_harness::transcript::BlobStore;

/// Version of what a shown episode looks like; the report's version must be bumped
/// with it, since the report publishes episode pages.
/// (2: a page in the study's outputs links to its report and to `episodes.html`.)
pub const VERSION: &str = "show/2";

pub use tbb_tables::paths::{episode_page as page_name, PAGE_PREFIX};

/// Candidates listed when a prefix or a selection matches several episodes.
const CANDIDATES: usize = 5;

/// Why an episode cannot be shown.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum ShowError {
    /// Neither a key prefix nor a selector was given.
    #[error("name an episode: a prefix of its key, or selectors such as --config and --family")]
    #[diagnostic(
        code(tbb::show::nothing),
        help("the key is the `transcript_ref` column of episodes.parquet; `tbb dag {manifest}` lists the episodes")
    )]
    Nothing {
        /// The manifest.
        manifest: String,
    },
    /// The prefix is not hexadecimal.
    #[error("`{prefix}` is not a key prefix: an episode key is hexadecimal")]
    #[diagnostic(
        code(tbb::show::bad_prefix),
        help("the key is the `transcript_ref` column of episodes.parquet")
    )]
    BadPrefix {
        /// What was given.
        prefix: String,
    },
    /// No episode's key starts with the prefix.
    #[error("no episode of study `{study}` has a key starting with `{prefix}`")]
    #[diagnostic(
        code(tbb::show::unknown_prefix),
        help("the key is the `transcript_ref` column of episodes.parquet; or select the episode with --config, --family, --v, --w, --d, --arm, --repeat")
    )]
    UnknownPrefix {
        /// The study.
        study: String,
        /// What was given.
        prefix: String,
    },
    /// Several episodes' keys start with the prefix.
    #[error("{count} episodes have a key starting with `{prefix}`")]
    #[diagnostic(
        code(tbb::show::ambiguous_prefix),
        help("give more digits; candidates:\n{candidates}")
    )]
    AmbiguousPrefix {
        /// What was given.
        prefix: String,
        /// How many match.
        count: usize,
        /// A few, one a line: key prefix and identity.
        candidates: String,
    },
    /// No episode has the selected identity.
    #[error("no episode of study `{study}` matches {selection}")]
    #[diagnostic(code(tbb::show::no_match), help("{help}"))]
    NoMatch {
        /// The study.
        study: String,
        /// The selectors, as `name=value`.
        selection: String,
        /// The values a selector could take, or did you mean.
        help: String,
    },
    /// Several episodes have the selected identity.
    #[error("{count} episodes match {selection}")]
    #[diagnostic(
        code(tbb::show::many_match),
        help("add selectors (--config --family --v --w --d --r --depth --arm --cap --repeat --block) or give a key prefix, or write a page for each with --all --html; candidates:\n{candidates}")
    )]
    ManyMatch {
        /// The selectors.
        selection: String,
        /// How many match.
        count: usize,
        /// A few, one a line.
        candidates: String,
    },
    /// The episode has not run yet.
    #[error("episode {id} has not run yet")]
    #[diagnostic(
        code(tbb::show::not_run),
        help("run `tbb apply {manifest}` first (with the same --outputs)")
    )]
    NotRun {
        /// Its identity.
        id: String,
        /// The manifest.
        manifest: String,
    },
    /// The stored episode cannot be read back.
    #[error("episode {id} cannot be read back: {why}")]
    #[diagnostic(
        code(tbb::show::unreadable),
        help("`tbb certify {manifest}` checks every stored episode; `tbb apply {manifest}` reruns what is missing")
    )]
    Unreadable {
        /// Its identity.
        id: String,
        /// What is wrong.
        why: String,
        /// The manifest.
        manifest: String,
    },
    /// A page cannot be written.
    #[error("cannot write the episode page {path}")]
    #[diagnostic(
        code(tbb::show::write),
        help("check that the study's outputs folder is writable and its disk has room")
    )]
    Write {
        /// The page.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The cache cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] CacheError),
}

/// The stored payloads and blobs episodes are read from, read from the cache once.
pub struct Sources {
    payloads: HashMap<String, String>,
    blobs: BlobStore,
}

impl Sources {
    /// Holds the payloads of `executes` instead of those it held.
    fn hold(
        &mut self,
        study: &Study,
        cache: &Cache,
        executes: &[NodeIndex],
    ) -> Result<(), ShowError> {
        let keys: Vec<&str> = executes
            .iter()
            .map(|&e| study.dag.graph[e].key.as_ref())
            .collect();
        self.payloads = cache.payloads(&keys)?;
        Ok(())
    }

    /// The payloads of `executes` and every blob of the cache.
    pub fn read(
        study: &Study,
        cache: &Cache,
        executes: &[NodeIndex],
    ) -> Result<Sources, ShowError> {
        let keys: Vec<&str> = executes
            .iter()
            .map(|&e| study.dag.graph[e].key.as_ref())
            .collect();
        Ok(Sources {
            payloads: cache.payloads(&keys)?,
            blobs: BlobStore {
                blobs: cache.blobs()?.into_iter().collect(),
            },
        })
    }
}

/// The view of the episode of execute node `execute`, read from `cache`.
pub fn load(study: &Study, cache: &Cache, execute: NodeIndex) -> Result<EpisodeView, ShowError> {
    let node = &study.dag.graph[execute];
    if cache.get(&node.key).is_none() {
        return Err(ShowError::NotRun {
            id: node.id(),
            manifest: study.manifest.path.display().to_string(),
        });
    }
    let variant = variant_of(study, execute).map_err(|why| unreadable(study, execute, why))?;
    let sources = Sources::read(study, cache, &[execute])?;
    view(study, execute, &sources, &variant)
}

/// The variant of an execute node, compiled again from the families.
pub fn variant_of(study: &Study, execute: NodeIndex) -> Result<Variant, String> {
    let Work::Execute { compile: c, .. } = study.dag.graph[execute].work else {
        return Err("not an execute node".into());
    };
    match &study.dag.graph[c].work {
        Work::Compile { family, cell } => study
            .families
            .families
            .get(*family)
            .ok_or_else(|| "its family is not loaded".to_string())
            .and_then(|f| {
                compile(f, cell).map_err(|e| format!("its variant does not compile: {e}"))
            }),
        _ => Err("its compile node is not a compile node".into()),
    }
}

fn unreadable(study: &Study, execute: NodeIndex, why: String) -> ShowError {
    ShowError::Unreadable {
        id: study.dag.graph[execute].id(),
        why,
        manifest: study.manifest.path.display().to_string(),
    }
}

/// The pages of the episodes whose keys are `keys` (execute keys, `transcript_ref`),
/// as `(episodes/<page name>, html)` in the order given: what the report publishes
/// beside itself. `variants` are the study's compiled variants by compile node (those
/// missing are compiled again).
pub fn pages(
    study: &Study,
    cache: &Cache,
    variants: &HashMap<NodeIndex, std::sync::Arc<Variant>>,
    keys: &[String],
) -> Result<Vec<(String, String)>, ShowError> {
    let by_key: HashMap<&str, NodeIndex> = study
        .dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Execute)
        .map(|(i, n)| (n.key.as_ref(), i))
        .collect();
    let mut executes = Vec::with_capacity(keys.len());
    for k in keys {
        match by_key.get(k.as_str()) {
            Some(&e) => executes.push(e),
            None => {
                return Err(ShowError::UnknownPrefix {
                    study: study.manifest.study.clone(),
                    prefix: k.clone(),
                })
            }
        }
    }
    let sources = Sources::read(study, cache, &executes)?;
    let fields: Vec<Vec<(&'static str, String)>> = executes
        .iter()
        .map(|&e| study.dag.graph[e].fields.to_vec())
        .collect();
    let identities: Vec<(&str, &[(&'static str, String)])> = executes
        .iter()
        .zip(&fields)
        .map(|(&e, fields)| (study.dag.graph[e].key.as_ref(), fields.as_slice()))
        .collect();
    let matched = matched::matched(&identities);
    let mut out = Vec::with_capacity(executes.len());
    for (e, matched) in executes.into_iter().zip(&matched) {
        let compiled;
        let variant: &Variant = match &study.dag.graph[e].work {
            Work::Execute { compile: c, .. } if variants.contains_key(c) => &variants[c],
            _ => {
                compiled = variant_of(study, e).map_err(|why| unreadable(study, e, why))?;
                &compiled
            }
        };
        let view = view(study, e, &sources, variant)?;
        out.push((
            format!("episodes/{}", page_name(&view.key)),
            html::render(&view, html::Placed::InStudy { matched }),
        ));
    }
    Ok(out)
}

/// What `tbb show --all` keeps of the episodes it selected, by their verdicts (which
/// the study's DAG does not know: each is graded again to be tested).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerdictFilter {
    /// `Some(true)`: the episodes that passed; `Some(false)`: those that failed.
    pub passed: Option<bool>,
    /// Only the episodes their terminal flag ended ([`terminal_flag_names`]; `none` for
    /// those no flag ended).
    pub flag: Option<String>,
}

/// The names `--flag` takes: `none`, then each terminal flag's published name.
pub fn terminal_flag_names() -> impl Iterator<Item = &'static str> {
    std::iter::once("none").chain(TerminalFlag::ALL.iter().map(|f| f.name()))
}

impl VerdictFilter {
    /// Whether it keeps every episode.
    pub fn is_empty(&self) -> bool {
        self.passed.is_none() && self.flag.is_none()
    }

    fn keeps(&self, v: &VerdictView) -> bool {
        self.passed.is_none_or(|p| p == v.vts)
            && self
                .flag
                .as_deref()
                .is_none_or(|f| v.terminal_flag.map_or("none", TerminalFlag::name) == f)
    }
}

/// What [`write_pages`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Pages written.
    pub pages: usize,
    /// Their size.
    pub bytes: u64,
    /// Selected episodes not run yet (no page).
    pub not_run: usize,
    /// Selected episodes the verdict filter left out.
    pub left_out: usize,
}

/// How many episodes' payloads are held at once while pages are written.
const PAGES_AT_ONCE: usize = 256;

/// Writes into `dir` (a folder of the study's outputs: `show/`) the page of each of
/// `executes` that has run and that `filter` keeps, each linked to the report, to the
/// index of every episode and to its matched episodes among the pages written. The
/// payloads are read a few hundred at a time and each page is written as it is
/// rendered, so a study's every episode can be written in bounded memory.
pub fn write_pages(
    study: &Study,
    cache: &Cache,
    executes: &[NodeIndex],
    filter: &VerdictFilter,
    dir: &std::path::Path,
) -> Result<Written, ShowError> {
    let mut written = Written::default();
    let run: Vec<NodeIndex> = executes
        .iter()
        .copied()
        .filter(|&e| cache.get(&study.dag.graph[e].key).is_some())
        .collect();
    written.not_run = executes.len() - run.len();
    let mut sources = Sources {
        payloads: HashMap::new(),
        blobs: BlobStore {
            blobs: cache.blobs()?.into_iter().collect(),
        },
    };
    let mut variants: HashMap<NodeIndex, Variant> = HashMap::new();
    // Each chunk's views, graded again, handed to `each` with the chunk's sources.
    let mut views = |chunk: &[NodeIndex],
                     each: &mut dyn FnMut(EpisodeView) -> Result<(), ShowError>|
     -> Result<(), ShowError> {
        sources.hold(study, cache, chunk)?;
        for &e in chunk {
            let Work::Execute { compile: c, .. } = study.dag.graph[e].work else {
                continue;
            };
            let variant = match variants.entry(c) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(variant_of(study, e).map_err(|why| unreadable(study, e, why))?)
                }
            };
            each(view(study, e, &sources, variant)?)?;
        }
        Ok(())
    };
    // The pages to write: a verdict filter needs each episode graded first, since the
    // matched links are among the pages written.
    let kept: Vec<NodeIndex> = if filter.is_empty() {
        run
    } else {
        let mut keep = Vec::with_capacity(run.len());
        for chunk in run.chunks(PAGES_AT_ONCE) {
            let mut verdicts = Vec::with_capacity(chunk.len());
            views(chunk, &mut |v| {
                verdicts.push(filter.keeps(&v.verdict));
                Ok(())
            })?;
            keep.extend(
                chunk
                    .iter()
                    .zip(verdicts)
                    .filter_map(|(&e, kept)| kept.then_some(e)),
            );
        }
        written.left_out = run.len() - keep.len();
        keep
    };
    let fields: Vec<Vec<(&'static str, String)>> = kept
        .iter()
        .map(|&e| study.dag.graph[e].fields.to_vec())
        .collect();
    let identities: Vec<(&str, &[(&'static str, String)])> = kept
        .iter()
        .zip(&fields)
        .map(|(&e, fields)| (study.dag.graph[e].key.as_ref(), fields.as_slice()))
        .collect();
    let matched = matched::matched(&identities);
    let mut at = 0;
    for chunk in kept.chunks(PAGES_AT_ONCE) {
        views(chunk, &mut |v| {
            let html = html::render(
                &v,
                html::Placed::InStudy {
                    matched: matched.get(at).map_or(&[], Vec::as_slice),
                },
            );
            at += 1;
            let path = dir.join(page_name(&v.key));
            tbb_tables::write_text(&path, &html).map_err(|source| ShowError::Write {
                path: path.display().to_string(),
                source,
            })?;
            written.pages += 1;
            written.bytes += html.len() as u64;
            Ok(())
        })?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::view::limits_view;
    use super::*;
    use tbb_core::grade::grade_with_budget;
    use tbb_core::grade::trace::StopReason;

    #[test]
    fn headroom_is_the_limit_minus_the_use_and_goes_negative_when_exceeded() {
        // A call limit of 8 with 5 calls made leaves 3.
        assert_eq!(Headroom { limit: 8, used: 5 }.left(), 3);
        // 128,000 tokens with 131,072 reported is 3,072 over.
        assert_eq!(
            Headroom {
                limit: 128_000,
                used: 131_072
            }
            .left(),
            -3_072
        );
        // Nothing used leaves the whole limit; the extremes do not overflow.
        assert_eq!(Headroom { limit: 4, used: 0 }.left(), 4);
        assert_eq!(
            Headroom {
                limit: 0,
                used: u64::MAX
            }
            .left(),
            -i128::from(u64::MAX)
        );
    }

    fn variant() -> Variant {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../families");
        let set = tbb_core::family::FamilySet::load(&root).unwrap_or_else(|e| panic!("{e}"));
        compile(&set.families[0], &tbb_core::compile::Cell::capacity()[0])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_reference_trace_leaves_the_slack_of_the_call_limit_and_the_rest_of_the_budget() {
        let v = variant();
        let trace = tbb_core::grade::reference::reference_trace(&v);
        let verdict = grade_with_budget(&v, &trace, 128_000);
        assert!(verdict.vts);
        let l = limits_view(&v, &trace, &verdict);
        assert_eq!(l.fired, None);
        // The call limit is the certified minimum plus two: two calls left.
        assert_eq!(l.calls.used, u64::from(v.certified_min_calls));
        assert_eq!(l.calls.left(), 2);
        // The turn limit is the call limit plus two; one request per call plus the answer.
        assert_eq!(l.turns.used, u64::from(v.certified_min_calls) + 1);
        assert_eq!(l.turns.left(), 3);
        // Tokens: the sum of every response's prompt and completion, by hand.
        let by_hand: u64 = trace
            .turns
            .iter()
            .map(|t| t.response.usage.input_tokens + t.response.usage.output_tokens)
            .sum();
        assert_eq!(l.tokens.used, by_hand);
        assert_eq!(l.tokens.left(), 128_000 - i128::from(by_hand));
        assert_eq!(l.calls_needed, 0);
    }

    #[test]
    fn a_truncation_after_the_first_call_names_the_cap_and_the_calls_still_needed() {
        let v = variant();
        let mut trace = tbb_core::grade::reference::reference_trace(&v);
        // Cut the second response at the cap: only the first call was executed.
        trace.turns.truncate(2);
        let cut = &mut trace.turns[1];
        cut.executed.clear();
        cut.response.tool_calls.clear();
        cut.response.text = None;
        cut.response.finish_reason = tbb_core::grade::trace::FinishReason::Length;
        cut.response.usage.output_tokens = u64::from(trace.limits.completion_cap);
        trace.final_answer = None;
        trace.stop = StopReason::Truncated;
        let verdict = grade_with_budget(&v, &trace, 128_000);
        assert_eq!(
            verdict.terminal_flag,
            Some(tbb_core::grade::TerminalFlag::Truncation)
        );
        let l = limits_view(&v, &trace, &verdict);
        assert!(
            l.fired
                .as_deref()
                .is_some_and(|f| f.starts_with("completion cap")),
            "{:?}",
            l.fired
        );
        assert_eq!(l.completion.left(), 0);
        assert_eq!(l.calls.used, 1);
        assert_eq!(l.calls.left(), i128::from(v.call_limit) - 1);
        assert_eq!(l.calls_needed, v.certified_min_calls as usize - 1);
    }
}
