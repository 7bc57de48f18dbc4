//! Okapi BM25 over a small in-memory corpus: the lexical scorer of the retrieval menu.
//!
//! Owns: the tokenizer and the scoring formula, written out here so that a tool's
//! score is a documented function of public text and of nothing else.
//!
//! Why not a crate: the crates.io candidates were looked at (`bm25` 2.3, `rank-bm25`
//! 0.1). `bm25` tokenizes with stemming, stop-word lists and language detection by
//! default and embeds tokens by hashing them; `rank-bm25` is a first release that
//! mirrors Python's IDF flooring. Here the retrieved menu *is* the experimental
//! manipulation: a tokenizer or IDF variant that changed in a dependency upgrade would
//! silently change which tools every retrieval episode sees, and so the results. The
//! formula is twenty lines; owning them keeps the menus stable and reviewable, and the
//! tests below pin them against scores computed by hand.
//!
//! The formula (Robertson's Okapi BM25 with the non-negative IDF Lucene uses):
//!
//! ```text
//! idf(t)     = ln(1 + (N − n_t + 0.5) / (n_t + 0.5))
//! score(d,q) = Σ_{t ∈ terms(q)} idf(t) · f(t,d) · (k1 + 1) / (f(t,d) + k1 · (1 − b + b · |d| / avgdl))
//! ```
//!
//! with `N` documents, `n_t` of them holding `t`, `f(t,d)` the count of `t` in `d`,
//! `|d|` the token count of `d`, `avgdl` the mean token count, `k1 = 1.2`, `b = 0.75`.
//! `terms(q)` is the query's *distinct* tokens (a word the request repeats counts once).
//!
//! Tokens: maximal runs of alphanumeric characters, lowercased (`nwf_euw_recv_read` →
//! `nwf`, `euw`, `recv`, `read`; `eu-west` → `eu`, `west`). No stemming and no stop
//! words: IDF already gives words every document holds almost no weight.
//!
//! Never: reads anything but the strings it is given; uses a hash map's iteration
//! order (maps are `BTreeMap`).

use std::collections::{BTreeMap, BTreeSet};

/// Term-frequency saturation.
pub const K1: f64 = 1.2;
/// Length normalisation.
pub const B: f64 = 0.75;

/// The tokens of `text`: lowercased runs of alphanumeric characters.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A BM25 index over a fixed list of documents.
#[derive(Debug, Clone)]
pub struct Index {
    /// Term counts of each document.
    docs: Vec<BTreeMap<String, u32>>,
    /// Token count of each document.
    lengths: Vec<usize>,
    /// Documents holding each term.
    df: BTreeMap<String, u32>,
    /// Mean token count (0 for an empty corpus).
    avgdl: f64,
}

impl Index {
    /// Indexes `documents`, each given as its text.
    pub fn new<S: AsRef<str>>(documents: &[S]) -> Index {
        let mut docs = Vec::with_capacity(documents.len());
        let mut lengths = Vec::with_capacity(documents.len());
        let mut df: BTreeMap<String, u32> = BTreeMap::new();
        for text in documents {
            let tokens = tokenize(text.as_ref());
            lengths.push(tokens.len());
            let mut tf: BTreeMap<String, u32> = BTreeMap::new();
            for t in tokens {
                *tf.entry(t).or_insert(0) += 1;
            }
            for t in tf.keys() {
                *df.entry(t.clone()).or_insert(0) += 1;
            }
            docs.push(tf);
        }
        let total: usize = lengths.iter().sum();
        let avgdl = if lengths.is_empty() {
            0.0
        } else {
            total as f64 / lengths.len() as f64
        };
        Index {
            docs,
            lengths,
            df,
            avgdl,
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the corpus is empty.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The IDF of `term` (0 for a term no document holds).
    pub fn idf(&self, term: &str) -> f64 {
        let n = f64::from(self.df.get(term).copied().unwrap_or(0));
        if n == 0.0 {
            return 0.0;
        }
        let big_n = self.docs.len() as f64;
        (1.0 + (big_n - n + 0.5) / (n + 0.5)).ln()
    }

    /// The score of every document against `query`, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let terms: BTreeSet<String> = tokenize(query).into_iter().collect();
        let weighted: Vec<(&String, f64)> = terms
            .iter()
            .map(|t| (t, self.idf(t)))
            .filter(|(_, idf)| *idf > 0.0)
            .collect();
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(tf, &len)| {
                // A corpus of empty documents has avgdl 0: no term matches anyway.
                let norm = if self.avgdl > 0.0 {
                    K1 * (1.0 - B + B * len as f64 / self.avgdl)
                } else {
                    K1
                };
                weighted
                    .iter()
                    .map(|(t, idf)| {
                        let f = f64::from(tf.get(*t).copied().unwrap_or(0));
                        idf * f * (K1 + 1.0) / (f + norm)
                    })
                    .sum()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn tokens_are_lowercased_alphanumeric_runs() {
        assert_eq!(
            tokenize("nwf_euw_recv_read_invoice: workspace=Northwind-Finance; 2026."),
            [
                "nwf",
                "euw",
                "recv",
                "read",
                "invoice",
                "workspace",
                "northwind",
                "finance",
                "2026"
            ]
        );
        assert!(tokenize(" ,;- ").is_empty());
    }

    /// By hand: N = 3, avgdl = (3 + 2 + 4) / 3 = 3.
    /// idf(invoice) = ln(1 + 1.5 / 2.5) = ln 1.6; idf(search) = ln(1 + 2.5 / 1.5) = ln(8/3).
    /// d0 (|d| = avgdl): each term's factor is 2.2 / (1 + 1.2) = 1, so ln 1.6 + ln(8/3).
    /// d1 (|d| = 2): factor 2.2 / (1 + 1.2 (0.25 + 0.75 · 2/3)) = 2.2 / 1.9.
    #[test]
    fn scores_match_the_hand_computation() {
        let index = Index::new(&[
            "search invoice records",
            "read invoice",
            "send mail message now",
        ]);
        let s = index.scores("Invoice, search! invoice");
        close(index.idf("invoice"), 1.6f64.ln());
        close(index.idf("search"), (8.0f64 / 3.0).ln());
        close(s[0], 1.6f64.ln() + (8.0f64 / 3.0).ln());
        close(s[0], 1.450_832_882_257_461_9);
        close(s[1], 1.6f64.ln() * 2.2 / 1.9);
        close(s[1], 0.544_214_728_600_325_5);
        close(s[2], 0.0);
    }

    /// By hand: N = 2, avgdl = 2.5, idf(a) = ln(1 + 1.5 / 1.5) = ln 2; in d0 f = 2 and
    /// |d| = 3: 2 · 2.2 / (2 + 1.2 (0.25 + 0.75 · 3 / 2.5)) = 4.4 / 3.38.
    #[test]
    fn repeated_terms_saturate() {
        let index = Index::new(&["a a b", "b c"]);
        let s = index.scores("a");
        close(s[0], 2f64.ln() * 4.4 / 3.38);
        close(s[0], 0.902_321_773_509_988);
        close(s[1], 0.0);
        // A term every document holds still weighs a little (the IDF is never negative).
        close(index.idf("b"), (1.0f64 + 0.5 / 2.5).ln());
    }

    #[test]
    fn unknown_terms_and_empty_corpora_score_zero() {
        let index = Index::new(&["a b"]);
        assert_eq!(index.scores("zzz"), [0.0]);
        let empty = Index::new::<&str>(&[]);
        assert!(empty.is_empty() && empty.scores("a").is_empty());
        let blank = Index::new(&["", ""]);
        assert_eq!(blank.scores("a"), [0.0, 0.0]);
    }
}
