//! The agent's vocabulary: how it turns text into comparable words.
//!
//! [`stems`] lower-cases a text, splits it into words (at anything that is not a letter
//! or a digit, so `snake_case` names split too), drops function words ([`STOP`]) and
//! strips a few suffixes, so that `messages`, `message` and `messaging` meet. [`LEXICON`]
//! is the everyday knowledge a model brings to a request: that to *text* someone is to
//! send a message, that Christmas is a holiday, that *tomorrow* is a date, that *turn
//! off* means disable. Each entry adds words with a weight (1 a synonym, less an
//! association), so a tool whose own words are the request's scores higher than one
//! reached through an association. [`VERBS`] maps what the request asks to do to the
//! verbs tool names begin with.
//!
//! The lists are a small, fixed vocabulary, listed so that a reader can see what the
//! agent understands. Never: names a tool, a scenario or a benchmark; a word is here
//! because people use it, not because some tool does.

/// Function words that carry no topic (compared after lower-casing, before stemming).
pub const STOP: &[&str] = &[
    "a", "an", "the", "to", "of", "for", "in", "at", "by", "with", "and", "or", "is", "are", "be",
    "it", "its", "this", "that", "me", "i", "you", "your", "we", "our", "us", "do", "does", "can",
    "could", "would", "should", "please", "will", "want", "like", "some", "someone", "any", "from",
    "as", "into", "about", "up", "just", "there", "their", "they", "them", "s", "t", "if", "not",
    "no", "yes", "be", "been", "was", "were", "has", "have", "had", "so", "but", "than", "then",
    "also", "all", "each", "either", "one", "which", "what", "who", "how", "when", "where", "why",
    "hey", "hi", "hello", "thanks", "thank", "okay", "ok", "let", "know", "tell", "need", "get",
    "give", "find", "my", "mine", "myself", "he", "she", "his", "her", "him", "these", "those",
    "here", "many", "much", "more", "most", "other", "another", "over", "under", "e", "g", "etc",
    "based", "provided", "given", "using", "use", "used",
];

/// Everyday words and the words they bring to mind, with a weight: 1 for a synonym
/// (the request's word stands for the tool's), less for an association.
pub const LEXICON: &[(&str, &[&str], f64)] = &[
    // Switching things.
    ("turn", &["set", "status"], 1.0),
    ("switch", &["set", "status"], 1.0),
    ("enable", &["set", "on"], 1.0),
    ("disable", &["set", "off"], 1.0),
    ("on", &["enable"], 1.0),
    ("off", &["disable"], 1.0),
    ("activate", &["enable", "set"], 1.0),
    ("deactivate", &["disable", "set"], 1.0),
    ("cell", &["cellular"], 1.0),
    ("mobile", &["cellular"], 1.0),
    ("data", &["cellular"], 0.5),
    ("internet", &["wifi"], 0.5),
    ("gps", &["location"], 1.0),
    ("power", &["battery"], 0.5),
    // Messages and people.
    ("text", &["message", "send"], 1.0),
    ("texted", &["message"], 1.0),
    ("sms", &["message"], 1.0),
    ("saying", &["message", "content"], 0.5),
    ("say", &["message", "content"], 0.5),
    ("number", &["phone"], 0.5),
    ("call", &["phone"], 0.5),
    ("contact", &["person"], 0.5),
    ("person", &["contact"], 0.5),
    ("friend", &["contact", "relationship"], 0.5),
    ("mom", &["contact", "relationship"], 0.5),
    ("dad", &["contact", "relationship"], 0.5),
    ("mother", &["contact", "relationship"], 0.5),
    ("father", &["contact", "relationship"], 0.5),
    ("sister", &["contact", "relationship"], 0.5),
    ("brother", &["contact", "relationship"], 0.5),
    ("wife", &["contact", "relationship"], 0.5),
    ("husband", &["contact", "relationship"], 0.5),
    ("boss", &["contact", "relationship"], 0.5),
    ("self", &["self"], 1.0),
    // Reminders and time.
    ("remind", &["reminder"], 1.0),
    ("todo", &["reminder"], 0.5),
    ("until", &["diff", "difference"], 1.0),
    ("since", &["diff", "difference"], 1.0),
    ("ago", &["diff", "difference", "shift"], 0.5),
    ("long", &["diff", "difference"], 0.5),
    ("between", &["diff", "difference"], 0.5),
    ("later", &["shift"], 0.5),
    ("today", &["timestamp", "date", "day"], 0.5),
    ("tomorrow", &["timestamp", "date", "day"], 0.5),
    ("yesterday", &["timestamp", "date", "day"], 0.5),
    ("tonight", &["timestamp", "date"], 0.5),
    ("time", &["timestamp"], 0.5),
    ("date", &["timestamp"], 0.5),
    ("week", &["timestamp", "day"], 0.5),
    ("month", &["timestamp", "date"], 0.5),
    ("year", &["timestamp", "date"], 0.5),
    ("christmas", &["holiday"], 1.0),
    ("thanksgiving", &["holiday"], 1.0),
    ("halloween", &["holiday"], 1.0),
    ("easter", &["holiday"], 1.0),
    ("valentine", &["holiday"], 1.0),
    ("independence", &["holiday"], 1.0),
    ("memorial", &["holiday"], 1.0),
    ("labor", &["holiday"], 1.0),
    ("veterans", &["holiday"], 1.0),
    ("juneteenth", &["holiday"], 1.0),
    ("eve", &["holiday"], 0.5),
    // Places and weather.
    ("where", &["location"], 1.0),
    ("address", &["location"], 0.5),
    ("far", &["distance"], 1.0),
    ("forecast", &["weather"], 1.0),
    ("rain", &["weather"], 1.0),
    ("temperature", &["weather"], 0.5),
    ("hot", &["weather"], 0.5),
    ("cold", &["weather"], 0.5),
    // Quantities.
    ("convert", &["conversion", "unit"], 1.0),
    ("fahrenheit", &["unit"], 1.0),
    ("celsius", &["unit"], 1.0),
    ("kilometer", &["unit"], 1.0),
    ("mile", &["unit"], 1.0),
    ("meter", &["unit"], 1.0),
    ("feet", &["unit"], 1.0),
    ("foot", &["unit"], 1.0),
    ("inch", &["unit"], 1.0),
    ("pound", &["unit"], 1.0),
    ("kilogram", &["unit"], 1.0),
    ("ounce", &["unit"], 1.0),
    ("gallon", &["unit"], 1.0),
    ("liter", &["unit"], 1.0),
    ("dollar", &["currency"], 1.0),
    ("euro", &["currency"], 1.0),
    ("yen", &["currency"], 1.0),
    ("share", &["stock"], 0.5),
    ("price", &["stock"], 0.5),
];

/// What the request asks to do, and the verbs a tool's name starts with for it.
pub const VERBS: &[(&str, &[&str])] = &[
    ("send", &["send"]),
    ("text", &["send"]),
    ("message", &["send"]),
    ("turn", &["set"]),
    ("switch", &["set"]),
    ("enable", &["set"]),
    ("disable", &["set"]),
    ("activate", &["set"]),
    ("deactivate", &["set"]),
    ("set", &["set", "add"]),
    ("add", &["add"]),
    ("create", &["add"]),
    ("save", &["add"]),
    ("remind", &["add"]),
    ("new", &["add"]),
    ("change", &["modify", "set", "update"]),
    ("update", &["modify", "update"]),
    ("modify", &["modify"]),
    ("edit", &["modify"]),
    ("rename", &["modify"]),
    ("move", &["modify"]),
    ("delete", &["remove", "delete"]),
    ("remove", &["remove", "delete"]),
    ("cancel", &["remove", "delete"]),
    ("what", &["search", "get", "find"]),
    ("who", &["search", "get", "find"]),
    ("which", &["search", "get", "find"]),
    ("when", &["search", "get", "find"]),
    ("where", &["search", "get", "find"]),
    ("find", &["search", "find", "get"]),
    ("look", &["search", "find", "get"]),
    ("search", &["search"]),
    ("show", &["search", "get"]),
    ("check", &["get", "search"]),
    ("convert", &["convert", "unit"]),
    ("calculate", &["calculate"]),
];

/// Words that open a yes/no question.
pub const POLAR: &[&str] = &[
    "is", "are", "am", "was", "were", "do", "does", "did", "has", "have",
];

/// A word's stem: a few suffixes stripped so that inflections meet.
pub fn stem(word: &str) -> String {
    let mut s = word;
    for suffix in ["ing", "ies", "ed", "es", "s"] {
        if s.len() >= suffix.len() + 3 && s.ends_with(suffix) && !s.ends_with("ss") {
            s = &s[..s.len() - suffix.len()];
            break;
        }
    }
    if s.len() > 3 && s.ends_with('e') {
        s = &s[..s.len() - 1];
    }
    s.to_string()
}

/// The lower-cased words of a text (letters and digits; everything else separates,
/// `wi-fi` is one word).
pub fn words(text: &str) -> Vec<String> {
    let text = text.to_lowercase().replace("wi-fi", "wifi");
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The content stems of a text: words without function words or numbers, stemmed.
pub fn stems(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !STOP.contains(&w.as_str()) && !w.chars().any(|c| c.is_ascii_digit()))
        .map(|w| stem(&w))
        .collect()
}

/// The stems a text brings to mind, each with its weight (the text's own words 1, a
/// lexicon entry's words its weight; the largest when reached twice).
pub fn concepts(text: &str) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut add = |s: String, w: f64| match out.iter_mut().find(|(t, _)| *t == s) {
        Some((_, old)) => *old = old.max(w),
        None => out.push((s, w)),
    };
    for w in words(text) {
        if let Some((_, more, weight)) = LEXICON.iter().find(|(k, _, _)| stem(k) == stem(&w)) {
            for m in *more {
                add(stem(m), *weight);
            }
        }
        if !STOP.contains(&w.as_str()) && !w.chars().any(|c| c.is_ascii_digit()) {
            add(stem(&w), 1.0);
        }
    }
    out
}

/// The tool verbs a text asks for.
pub fn verbs(text: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let words = words(text);
    // A yes/no question (`Is my wifi on?`) asks to look something up.
    if words.first().is_some_and(|w| POLAR.contains(&w.as_str())) {
        out.extend(["get", "search"]);
    }
    for w in words {
        if let Some((_, vs)) = VERBS.iter().find(|(k, _)| *k == w) {
            for v in *vs {
                if !out.contains(v) {
                    out.push(*v);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflections_and_snake_case_meet() {
        assert_eq!(stem("messages"), stem("message"));
        assert_eq!(stem("enabled"), stem("enable"));
        assert_eq!(stem("reminders"), "reminder");
        assert_eq!(
            stems("send_message_with_phone_number"),
            ["send", "messag", "phon", "number"]
        );
        assert_eq!(stems("Turn off the Wi-Fi"), ["turn", "off", "wifi"]);
    }

    #[test]
    fn the_lexicon_adds_what_a_word_brings_to_mind() {
        let c = concepts("How many days until Christmas?");
        let weight = |s: &str| c.iter().find(|(t, _)| t == s).map(|(_, w)| *w);
        assert_eq!(weight("holiday"), Some(1.0));
        assert_eq!(weight("diff"), Some(1.0));
        assert_eq!(weight("day"), Some(1.0));
        assert_eq!(weight("how"), None);
        assert_eq!(verbs("Turn off cellular service"), ["set"]);
        assert_eq!(verbs("Send a message to Bart"), ["send"]);
    }
}
