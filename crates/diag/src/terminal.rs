//! The one escaping of untrusted text (what a model, a tool or a provider's server
//! wrote, and the bytes of a user's file) before it reaches a terminal.
//!
//! Owns: which characters a terminal would act on rather than show ([`is_control`]:
//! the C0 controls, DEL, the C1 controls, and the bidirectional overrides and isolates
//! that reorder what follows them) and how each is written instead ([`escape`]: `\r`,
//! `\x1b`, `\u{202e}`). An escaped text holds none of them, so a hostile server cannot
//! retitle the terminal (OSC), clear it (CSI), ring it (BEL), or return to the start of
//! a line (CR) and print over what tbb printed.
//!
//! Never: escapes the HTML renderings (they escape for HTML), or touches the newline
//! and the tab of a multi-line text ([`escape`] keeps them; [`escape_line`], for a text
//! shown inside one line of tbb's own, escapes them too).

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal would act on `c` instead of showing it.
pub fn is_control(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}' | '\u{200e}' | '\u{200f}')
}

/// `text` with every character [`is_control`] says a terminal acts on written as an
/// escape, except the newline and the tab (the layout of a multi-line text). Borrows
/// when there is nothing to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_keeping(text, &['\n', '\t'])
}

/// [`escape`] for a text shown inside one line: the newline and the tab are escaped
/// too, so the text cannot start a line of its own.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_keeping(text, &[])
}

fn escape_keeping<'t>(text: &'t str, kept: &[char]) -> Cow<'t, str> {
    let unsafe_char = |c: char| is_control(c) && !kept.contains(&c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => write!(out, "\\n"),
            '\r' => write!(out, "\\r"),
            '\t' => write!(out, "\\t"),
            c if u32::from(c) < 0x80 => write!(out, "\\x{:02x}", u32::from(c)),
            c => write!(out, "\\u{{{:x}}}", u32::from(c)),
        };
    }
    Cow::Owned(out)
}

/// `text` with each byte of every character [`is_control`] says a terminal acts on
/// (the newline, the tab and the carriage return of a line end excepted) replaced by
/// `?`: the same length and the same character boundaries, so byte spans into the
/// text still point at the same places. For a file's text shown around a span.
pub fn mask_in_place(text: &str) -> Cow<'_, str> {
    let masked = |(i, c): (usize, char)| {
        is_control(c)
            && c != '\n'
            && c != '\t'
            && !(c == '\r' && text.as_bytes().get(i + 1) == Some(&b'\n'))
    };
    if !text.char_indices().any(masked) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if masked((i, c)) {
            out.extend(std::iter::repeat_n('?', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_written_as_escapes() {
        let hostile = "ok\x1b]0;pwned\x07\x1b[2J\rvts=true PASSED\u{9b}\u{202e}\x7f\n\tnext";
        let shown = escape(hostile);
        assert_eq!(
            shown,
            "ok\\x1b]0;pwned\\x07\\x1b[2J\\rvts=true PASSED\\u{9b}\\u{202e}\\x7f\n\tnext"
        );
        assert!(!shown
            .chars()
            .any(|c| is_control(c) && c != '\n' && c != '\t'));
        assert_eq!(escape_line("a\nb\tc"), "a\\nb\\tc");
        assert!(matches!(escape("plain é 漢\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn masking_keeps_lengths_and_line_ends() {
        let text = "a = \"\x1b[2J\u{202e}\"\r\nb = 1\r";
        let masked = mask_in_place(text);
        assert_eq!(masked.len(), text.len());
        assert_eq!(masked, "a = \"?[2J???\"\r\nb = 1?");
    }
}
