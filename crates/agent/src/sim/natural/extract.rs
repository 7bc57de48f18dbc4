//! Values a request's text carries, found by their shape: quoted or `saying:`-introduced
//! text, what a reminder is for, phone numbers, capitalised names, numbers, on/off
//! words, a relationship (`my mom`), units.
//!
//! Never: decides which parameter a value goes to ([`super::fill`] does, by the
//! parameter's name and type).

/// Months, weekdays and words that are capitalised without naming a person.
const NOT_NAMES: &[&str] = &[
    "i",
    "am",
    "pm",
    "ok",
    "okay",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "christmas",
    "thanksgiving",
    "halloween",
    "easter",
    "new",
    "year",
    "years",
    "day",
    "eve",
    "us",
    "usa",
    "posix",
];

/// Words that end the content of a reminder when a time follows.
const TIME_START: &[&str] = &[
    " tomorrow",
    " today",
    " tonight",
    " at ",
    " on ",
    " next ",
    " in ",
    " by ",
    " this ",
    " every ",
    " before ",
    " after ",
    " yesterday",
];

/// Kin and roles a request names with `my …`.
pub const RELATIONSHIPS: &[&str] = &[
    "mom",
    "mother",
    "dad",
    "father",
    "sister",
    "brother",
    "wife",
    "husband",
    "boss",
    "friend",
    "son",
    "daughter",
    "partner",
    "grandma",
    "grandpa",
    "aunt",
    "uncle",
    "cousin",
    "coworker",
    "colleague",
    "manager",
];

/// Text the user wants written: a quotation, or what follows `saying:`, `that says`,
/// `message:`. `None` when the request quotes nothing.
pub fn quoted(text: &str) -> Option<String> {
    for (open, close) in [('"', '"'), ('“', '”')] {
        if let Some(a) = text.find(open) {
            let rest = &text[a + open.len_utf8()..];
            if let Some(b) = rest.find(close) {
                return Some(rest[..b].to_string());
            }
        }
    }
    let lower = text.to_lowercase();
    for marker in [
        "saying:",
        "saying",
        "that says",
        "message:",
        "to say",
        "with the text",
    ] {
        if let Some(at) = lower.find(marker) {
            let rest = text[at + marker.len()..].trim();
            let rest = rest.trim_matches(|c| c == '\'' || c == '"');
            if !rest.is_empty() {
                return Some(rest.to_string());
            }
        }
    }
    None
}

/// What follows a loose `that` (`Text my mom that I'm running late`): the words meant
/// for someone else when nothing quotes them.
pub fn after_that(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let at = lower.find(" that ")?;
    let rest = text[at + " that ".len()..]
        .trim()
        .trim_end_matches(['.', '!'])
        .to_string();
    (!rest.is_empty()).then_some(rest)
}

/// The request without its quotation (so that the words written for someone else do
/// not count as the request's own).
pub fn without_quote(text: &str) -> String {
    match quoted(text) {
        Some(q) => text.replace(&q, " "),
        None => text.to_string(),
    }
}

/// What a reminder is for: the words after `remind me to`, `reminder to|for|about`, up
/// to the time they are wanted.
pub fn purpose(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let starts = [
        "remind me to ",
        "remind me about ",
        "remind me of ",
        "reminder to ",
        "reminder for ",
        "reminder about ",
        "reminder that says ",
        "remember to ",
    ];
    let (at, len) = starts
        .iter()
        .filter_map(|s| lower.find(s).map(|i| (i, s.len())))
        .min()?;
    let rest_lower = &lower[at + len..];
    let end = TIME_START
        .iter()
        .filter_map(|t| rest_lower.find(t))
        .min()
        .unwrap_or(rest_lower.len());
    let out = text[at + len..at + len + end]
        .trim()
        .trim_end_matches(['.', '!', '?', ','])
        .to_string();
    (!out.is_empty()).then_some(out)
}

/// Phone numbers: a run of digits (with `+`, spaces, dashes, dots or parentheses between
/// them) holding at least seven digits, written as found minus separators.
pub fn phones(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut digits = 0;
    let flush = |current: &mut String, digits: &mut usize, out: &mut Vec<String>| {
        if *digits >= 7 {
            out.push(std::mem::take(current));
        }
        current.clear();
        *digits = 0;
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_digit() {
            current.push(c);
            digits += 1;
        } else if c == '+' && current.is_empty() {
            current.push(c);
        } else if matches!(c, ' ' | '-' | '.' | '(' | ')')
            && !current.is_empty()
            && chars[i + 1..]
                .iter()
                .find(|n| !matches!(n, ' ' | '-' | '.' | '(' | ')'))
                .is_some_and(char::is_ascii_digit)
        {
        } else {
            flush(&mut current, &mut digits, &mut out);
        }
    }
    flush(&mut current, &mut digits, &mut out);
    out
}

/// Names: runs of capitalised words, except a message's first word when a lower-case
/// word follows it (a verb or a greeting), months, weekdays and holidays. Each message
/// is read on its own (its first word starts a sentence).
pub fn names(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    for sentence in message.split(['.', '!', '?', ';', ':', '\n']) {
        let tokens: Vec<&str> = sentence.split_whitespace().collect();
        let mut run: Vec<&str> = Vec::new();
        for (i, raw) in tokens.iter().enumerate() {
            let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
            let w = w.strip_suffix("'s").unwrap_or(w);
            let capital = w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().skip(1).all(|c| c.is_alphabetic() || c == '-')
                && !NOT_NAMES.contains(&w.to_lowercase().as_str());
            // A sentence's first word is a name only when a capitalised word follows
            // and it is no verb or function word ("Add Fredrik …", "It's Bart").
            let lower = w.to_lowercase();
            let first = i == 0
                && (tokens
                    .get(1)
                    .is_some_and(|n| !n.chars().next().is_some_and(char::is_uppercase))
                    || super::words::VERBS.iter().any(|(v, _)| *v == lower)
                    || super::words::LEXICON.iter().any(|(v, _, _)| *v == lower));
            let stop = super::words::STOP.contains(&w.to_lowercase().as_str());
            if capital && !first && !stop {
                run.push(w);
                if raw.ends_with(',') || raw.ends_with("'s") {
                    out.push(run.join(" "));
                    run.clear();
                }
            } else if !run.is_empty() {
                out.push(run.join(" "));
                run.clear();
            }
        }
        if !run.is_empty() {
            out.push(run.join(" "));
        }
    }
    out
}

/// Numbers written in the text (not parts of phone numbers or clock times).
pub fn numbers(text: &str) -> Vec<f64> {
    let phones = phones(text);
    let mut out = Vec::new();
    for raw in text.split_whitespace() {
        let w = raw.trim_matches(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'));
        let w = w.trim_end_matches('.');
        if raw.contains(':') || phones.iter().any(|p| p.contains(w) && w.len() >= 7) {
            continue;
        }
        let lower = raw.to_lowercase();
        if lower.ends_with("am") || lower.ends_with("pm") {
            continue;
        }
        if let Ok(x) = w.parse::<f64>() {
            out.push(x);
        }
    }
    out
}

/// Whether the request turns something on (`Some(true)`) or off (`Some(false)`).
pub fn switch(text: &str) -> Option<bool> {
    let words = super::words::words(text);
    let on = ["on", "enable", "activate", "start"];
    let off = ["off", "disable", "deactivate", "stop"];
    words.iter().rev().find_map(|w| {
        if on.contains(&w.as_str()) {
            Some(true)
        } else if off.contains(&w.as_str()) {
            Some(false)
        } else {
            None
        }
    })
}

/// A relationship the request names (`my mom` → `mom`).
pub fn relationship(text: &str) -> Option<String> {
    let words = super::words::words(text);
    words
        .windows(2)
        .find(|w| w[0] == "my" && RELATIONSHIPS.contains(&w[1].as_str()))
        .map(|w| w[1].clone())
}

/// `N from_unit to|in|into to_unit`: the two unit words around `to`/`in`.
pub fn units(text: &str) -> Option<(String, String)> {
    let words = super::words::words(text);
    let at = words
        .iter()
        .position(|w| w.chars().all(|c| c.is_ascii_digit()))?;
    let from = words.get(at + 1)?;
    let link = words[at + 2..]
        .iter()
        .position(|w| matches!(w.as_str(), "to" | "in" | "into"))?;
    let to = words.get(at + 2 + link + 1)?;
    Some((from.clone(), to.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_of_values_are_found() {
        assert_eq!(
            quoted("Send a message to Bart saying: Hey what's up").as_deref(),
            Some("Hey what's up")
        );
        assert_eq!(
            quoted("Text \"on my way\" to Mom").as_deref(),
            Some("on my way")
        );
        assert_eq!(quoted("Turn off cellular service"), None);
        assert_eq!(
            purpose("Add a reminder to buy chocolate milk tomorrow 5PM").as_deref(),
            Some("buy chocolate milk")
        );
        assert_eq!(phones("call +1 (245) 334-4098 now"), ["+12453344098"]);
        assert_eq!(names("Send a message to Bart saying hi"), ["Bart"]);
        assert_eq!(names("It's Bart"), ["Bart"]);
        assert_eq!(names("Hey what's up"), Vec::<String>::new());
        assert_eq!(
            names("Add Fredrik Thordendal to my contacts"),
            ["Fredrik Thordendal"]
        );
        assert_eq!(
            names("How many days until Christmas?"),
            Vec::<String>::new()
        );
        assert_eq!(switch("Turn off cellular service"), Some(false));
        assert_eq!(switch("Can you enable wifi"), Some(true));
        assert_eq!(
            relationship("Text my mom that I'm late"),
            Some("mom".into())
        );
        assert_eq!(numbers("Convert 25 celsius to fahrenheit"), [25.0]);
        assert_eq!(
            units("Convert 25 celsius to fahrenheit"),
            Some(("celsius".into(), "fahrenheit".into()))
        );
    }
}
