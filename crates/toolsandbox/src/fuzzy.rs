//! The fuzzy string scores upstream's searches use, as rapidfuzz 3.9.3 computes them.
//!
//! Upstream filters names, relationships and contents with rapidfuzz's `WRatio` after
//! its `default_process`, keeping rows scoring at least a threshold, best first and at
//! most five (`process.extract`'s default limit), and finds holidays by `partial_ratio`.
//! These are the same scorers written from rapidfuzz's definitions: `ratio` is the
//! normalised Indel similarity (via the longest common subsequence), `partial_ratio`
//! the best `ratio` of the shorter string against every alignment of it in the longer
//! (windows of its length, and the prefixes and suffixes that stick out), the token
//! scores compare sorted words and word sets, and `WRatio` combines them with
//! rapidfuzz's scales. Scores match rapidfuzz's to the last bit on the tests' pairs
//! (generated with rapidfuzz 3.9.3); rapidfuzz's other path for needles longer than 64
//! characters is not reproduced (it searches the same alignments).
//!
//! Strings are compared by Unicode scalar value, as rapidfuzz does for Python `str`.
//! Never: allocates per call beyond the strings' character vectors, or depends on a
//! locale.

/// rapidfuzz's `default_process`: every character that is not alphanumeric becomes a
/// space, letters are lowercased, and surrounding whitespace is trimmed.
pub fn default_process(s: &str) -> Vec<char> {
    let mapped: Vec<char> = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                let mut lower = c.to_lowercase();
                match (lower.next(), lower.next()) {
                    (Some(l), None) => l,
                    _ => c,
                }
            } else {
                ' '
            }
        })
        .collect();
    let start = mapped.iter().position(|c| !c.is_whitespace());
    let end = mapped.iter().rposition(|c| !c.is_whitespace());
    match (start, end) {
        (Some(a), Some(b)) => mapped[a..=b].to_vec(),
        _ => Vec::new(),
    }
}

fn lcs(a: &[char], b: &[char]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for &ca in a {
        let mut diagonal = 0;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == cb {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

fn indel_distance(a: &[char], b: &[char]) -> usize {
    a.len() + b.len() - 2 * lcs(a, b)
}

/// `ratio`: 100 × the normalised Indel similarity.
pub fn ratio(a: &[char], b: &[char]) -> f64 {
    let lensum = a.len() + b.len();
    if lensum == 0 {
        return 100.0;
    }
    let norm_dist = indel_distance(a, b) as f64 / lensum as f64;
    (1.0 - norm_dist) * 100.0
}

/// The best `ratio` of `short` against the alignments of it in `long`
/// (`short.len() <= long.len()`).
fn partial_impl(short: &[char], long: &[char]) -> f64 {
    let (n, m) = (short.len(), long.len());
    let mut best: f64 = 0.0;
    for i in 1..n {
        best = best.max(ratio(short, &long[..i]));
    }
    for i in 0..=(m - n) {
        best = best.max(ratio(short, &long[i..i + n]));
    }
    for i in (m - n + 1)..m {
        best = best.max(ratio(short, &long[i..]));
    }
    best
}

/// `partial_ratio`.
pub fn partial_ratio(a: &[char], b: &[char]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return if a.len() == b.len() { 100.0 } else { 0.0 };
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut best = partial_impl(short, long);
    if best != 100.0 && a.len() == b.len() {
        best = best.max(partial_impl(long, short));
    }
    best
}

fn sorted_words(s: &[char]) -> Vec<Vec<char>> {
    let mut words: Vec<Vec<char>> = s
        .split(|c| c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(<[char]>::to_vec)
        .collect();
    words.sort();
    words
}

fn join(words: &[Vec<char>]) -> Vec<char> {
    words.join(&' ')
}

/// The sorted, de-duplicated words of each side split into common and own words.
struct Decomposition {
    common: Vec<Vec<char>>,
    only_a: Vec<Vec<char>>,
    only_b: Vec<Vec<char>>,
}

fn decompose(a: &[Vec<char>], b: &[Vec<char>]) -> Decomposition {
    let mut a = a.to_vec();
    a.dedup();
    let mut b = b.to_vec();
    b.dedup();
    let common: Vec<Vec<char>> = a.iter().filter(|w| b.contains(w)).cloned().collect();
    let only_a = a.iter().filter(|w| !common.contains(w)).cloned().collect();
    let only_b = b.iter().filter(|w| !common.contains(w)).cloned().collect();
    Decomposition {
        common,
        only_a,
        only_b,
    }
}

/// rapidfuzz's `norm_distance<100>`: the score written as 100 − 100·dist/lensum.
fn norm_distance(dist: usize, lensum: usize) -> f64 {
    if lensum == 0 {
        100.0
    } else {
        100.0 - 100.0 * dist as f64 / lensum as f64
    }
}

/// `token_ratio`: the better of the sorted-words ratio and the word-set ratio.
fn token_ratio(a: &[char], b: &[char]) -> f64 {
    let words_a = sorted_words(a);
    let words_b = sorted_words(b);
    let d = decompose(&words_a, &words_b);
    if !d.common.is_empty() && (d.only_a.is_empty() || d.only_b.is_empty()) {
        return 100.0;
    }
    let ab = join(&d.only_a);
    let ba = join(&d.only_b);
    let sect_len = join(&d.common).len();
    let sep = usize::from(sect_len != 0);
    let sect_ab_len = sect_len + sep + ab.len();
    let sect_ba_len = sect_len + sep + ba.len();

    let mut result = ratio(&join(&words_a), &join(&words_b));
    result = result.max(norm_distance(
        indel_distance(&ab, &ba),
        sect_ab_len + sect_ba_len,
    ));
    if sect_len == 0 {
        return result;
    }
    let sect_ab = norm_distance(sep + ab.len(), sect_len + sect_ab_len);
    let sect_ba = norm_distance(sep + ba.len(), sect_len + sect_ba_len);
    result.max(sect_ab).max(sect_ba)
}

/// `partial_token_ratio`: 100 when the sides share a word, else the partial ratio of
/// the sorted words (and of the de-duplicated words, when that differs).
fn partial_token_ratio(a: &[char], b: &[char]) -> f64 {
    let words_a = sorted_words(a);
    let words_b = sorted_words(b);
    let d = decompose(&words_a, &words_b);
    if !d.common.is_empty() {
        return 100.0;
    }
    let result = partial_ratio(&join(&words_a), &join(&words_b));
    if words_a.len() == d.only_a.len() && words_b.len() == d.only_b.len() {
        return result;
    }
    result.max(partial_ratio(&join(&d.only_a), &join(&d.only_b)))
}

/// `WRatio` of two already processed strings.
pub fn wratio(a: &[char], b: &[char]) -> f64 {
    const UNBASE_SCALE: f64 = 0.95;
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (la, lb) = (a.len() as f64, b.len() as f64);
    let len_ratio = if la > lb { la / lb } else { lb / la };
    let end_ratio = ratio(a, b);
    if len_ratio < 1.5 {
        return end_ratio.max(token_ratio(a, b) * UNBASE_SCALE);
    }
    let partial_scale = if len_ratio < 8.0 { 0.9 } else { 0.6 };
    let end_ratio = end_ratio.max(partial_ratio(a, b) * partial_scale);
    end_ratio.max(partial_token_ratio(a, b) * UNBASE_SCALE * partial_scale)
}

/// `process.extract(query, choices, scorer=WRatio, processor=default_process,
/// score_cutoff=threshold)`: the indices of the choices scoring at least `threshold`,
/// best first (ties in choice order), at most five. Absent choices (`None`) are skipped.
pub fn extract(query: &str, choices: &[Option<&str>], threshold: f64) -> Vec<usize> {
    const LIMIT: usize = 5;
    let q = default_process(query);
    let mut scored: Vec<(f64, usize)> = choices
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|c| (wratio(&q, &default_process(c)), i)))
        .filter(|(score, _)| *score >= threshold)
        .collect();
    scored.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
    scored.truncate(LIMIT);
    scored.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<char> {
        default_process(s)
    }

    #[test]
    fn processing_keeps_letters_and_digits_only() {
        let out: String = default_process("  Hé_llo-World!! ÄÖ  ")
            .into_iter()
            .collect();
        assert_eq!(out, "hé llo world   äö");
        assert!(default_process(" !? ").is_empty());
    }

    // (a, b, WRatio, partial_ratio) after default_process, from rapidfuzz 3.9.3.
    const PAIRS: &[(&str, &str, f64, f64)] = include!("fuzzy_vectors.in");

    #[test]
    fn scores_match_rapidfuzz() {
        for &(a, b, w, pr) in PAIRS {
            assert_eq!(wratio(&p(a), &p(b)), w, "WRatio({a:?}, {b:?})");
            assert_eq!(
                partial_ratio(&p(a), &p(b)),
                pr,
                "partial_ratio({a:?}, {b:?})"
            );
        }
    }

    #[test]
    fn extract_keeps_the_best_five_at_or_above_the_threshold() {
        let choices = [Some("a"), None, Some("a b"), Some("b")];
        assert_eq!(extract("a", &choices, 0.0), vec![0, 2, 3]);
        assert_eq!(extract("a", &choices, 50.0), vec![0, 2]);
        let many = [Some("x"); 7];
        assert_eq!(extract("x", &many, 90.0), vec![0, 1, 2, 3, 4]);
    }
}
