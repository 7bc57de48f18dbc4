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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_lowered_split_on_non_alphanumerics_and_stemmed_past_three_letters() {
        assert_eq!(
            tokenize("Cellular service's OFF—turned, 72°F!"),
            vec!["cellular", "servic", "s", "off", "turn", "72", "f"]
        );
        assert!(tokenize("  —  ").is_empty());
    }

    #[test]
    fn f_measure_by_hand() {
        // target: cellular servic is turn off; prediction: i turn off cellular servic.
        // LCS 2 of 5 and 5 tokens: P = R = 0.4, F = 0.4.
        let f = rouge_l(
            "Cellular service is turned off",
            "I turned off cellular service",
        );
        assert_eq!(f, 2.0 * 0.4 * 0.4 / (0.4 + 0.4));
        assert_eq!(rouge_l("Wifi is on", "wifi IS on."), 1.0);
        assert_eq!(rouge_l("", "anything"), 0.0);
        assert_eq!(rouge_l("sent", "nothing alike"), 0.0);
    }

    /// `rouge-score` 0.1.2's fmeasure for these pairs (checked offline on 3,070 pairs of
    /// scenario texts, all equal to the bit).
    #[test]
    fn matches_rouge_score() {
        let cases: &[(&str, &str, f64)] = &[
            (
                "It is 5 days till Christmas Day",
                "There are 5 days left until Christmas",
                0.42857142857142855,
            ),
            (
                "Your reminder to buy chocolate milk is set",
                "I've added a reminder: buy chocolate milk tomorrow",
                0.47058823529411764,
            ),
        ];
        for (t, p, want) in cases {
            assert_eq!(rouge_l(t, p), *want, "{t} / {p}");
        }
    }
}
