//! ROUGE-L as upstream computes it: Google's `rouge-score` `RougeScorer(["rougeL"],
//! use_stemmer=True)`, `score(target, prediction)["rougeL"].fmeasure`.
//!
//! Owns the tokenizer (lower-case, every run of characters other than `a-z0-9` a
//! separator, tokens longer than three letters stemmed by NLTK's Porter stemmer, empty
//! tokens dropped) and the LCS F-measure. Never rounds: the caller narrows to `f32` as
//! upstream's `Float32` column does.

use super::porter::stem;

/// `rouge-score`'s default tokenizer with the stemmer on.
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(|t| if t.len() > 3 { stem(t) } else { t.to_string() })
        .filter(|t| !t.is_empty())
        .collect()
}

fn lcs_len(a: &[String], b: &[String]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The ROUGE-L F-measure of `prediction` against `target`, in `rouge-score`'s order of
/// operations (precision over the prediction's tokens, recall over the target's).
pub(crate) fn rouge_l(target: &str, prediction: &str) -> f64 {
    let t = tokenize(target);
    let p = tokenize(prediction);
    if t.is_empty() || p.is_empty() {
        return 0.0;
    }
    let lcs = lcs_len(&t, &p) as f64;
    let precision = lcs / p.len() as f64;
    let recall = lcs / t.len() as f64;
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}
