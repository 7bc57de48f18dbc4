//! The plain-text rendering of an [`EpisodeView`], for a terminal.
//!
//! Owns: the layout — identity, the system prompt by name, the user request, each
//! request and what followed it, the verdict, the limits. Texts the model or a tool
//! wrote are printed whole, indented under their heading.
//!
//! Texts the model, a tool or a server wrote are untrusted: the rendering is escaped
//! ([`tbb_diag::terminal::escape`]) so none of them can drive the terminal.
//!
//! Never: decides anything; every word is a field of the view.

use std::fmt::Write as _;

use super::{EpisodeView, Headroom, Outcome};
use tbb_core::grade::TerminalFlag;
use tbb_report::format::count;

/// The episode as text.
pub fn render(v: &EpisodeView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Episode {} of study {}", short(&v.key), v.study);
    let _ = writeln!(out, "  {}", v.id);
    let _ = writeln!(out, "  key {}  (grade node {})", v.key, short(&v.grade_key));
    for (name, value) in &v.identity {
        let _ = writeln!(out, "  {name:<15} {value}");
    }
    out.push('\n');
    if v.system_prompt.is_empty() {
        out.push_str("System prompt: none\n");
    } else {
        let _ = writeln!(
            out,
            "System prompt: {} ({} characters)",
            v.system_prompt,
            count(v.system_text.chars().count() as u64)
        );
    }
    out.push_str("User request:\n");
    indented(&mut out, &v.user_request, 4);

    for x in &v.exchanges {
        out.push('\n');
        for m in &x.harness_messages {
            out.push_str("Harness message:\n");
            indented(&mut out, m, 4);
        }
        let _ = writeln!(
            out,
            "Request {}: {} tools visible, completion cap {}",
            x.number,
            x.visible_tools,
            count(u64::from(x.max_completion_tokens))
        );
        match &x.outcome {
            Outcome::Failed { error, attempts } => {
                let _ = writeln!(out, "  Failed after {attempts} attempts: {error}");
            }
            Outcome::Response(r) => {
                let reasoning = r.reasoning_label();
                let _ = writeln!(
                    out,
                    "  Response: finish {} ({}); usage {} prompt ({} cached), {} completion, {}",
                    r.finish,
                    r.finish_raw_label(),
                    count(r.input_tokens),
                    count(r.cached_tokens),
                    count(r.output_tokens),
                    reasoning
                );
                if let Some(t) = &r.text {
                    out.push_str("  Text:\n");
                    indented(&mut out, t, 4);
                }
                for (id, name, args) in &r.tool_calls {
                    let _ = writeln!(out, "  Tool call {name} ({id}): {args}");
                }
                if let Some(why) = &r.violation {
                    let _ = writeln!(out, "  Protocol violation: {why}");
                }
            }
        }
        for o in &x.observations {
            let _ = writeln!(
                out,
                "  Observation of {} ({}), issued by the {}:",
                o.tool, o.call_id, o.by
            );
            if o.by != "model" {
                let _ = writeln!(out, "    arguments: {}", o.arguments);
            }
            indented(&mut out, &o.text, 4);
        }
    }

    let verdict = &v.verdict;
    out.push('\n');
    let _ = writeln!(
        out,
        "Verdict: {} (stop reason {})",
        if verdict.vts {
            "verified task success"
        } else {
            "failure"
        },
        verdict.stop_reason
    );
    for (o, meaning, ok) in &verdict.obligations {
        let mark = if *ok {
            "met  "
        } else if verdict.first_unmet == Some(*o) {
            "UNMET (first)"
        } else {
            "unmet"
        };
        let _ = writeln!(out, "  {o:?} {mark:<13} {meaning}");
    }
    let _ = writeln!(
        out,
        "  first unmet: {}; terminal flag: {}",
        verdict
            .first_unmet
            .map_or("none".to_string(), |o| format!("{o:?}")),
        verdict.terminal_flag.map_or("none", TerminalFlag::name)
    );
    if let Some(f) = &verdict.infra {
        let _ = writeln!(
            out,
            "  infrastructure: {} after {} attempts, last HTTP status {}: {}",
            f.cause,
            f.attempts,
            f.http_status.map_or("none".to_string(), |s| s.to_string()),
            f.message
        );
    }
    for e in &verdict.integrity_errors {
        let _ = writeln!(out, "  integrity: {e}");
    }

    let l = &v.limits;
    out.push('\n');
    let _ = writeln!(
        out,
        "Limits: {}",
        l.fired
            .as_deref()
            .unwrap_or("none fired (the episode answered)")
    );
    headroom(&mut out, "calls", "call limit", l.calls);
    headroom(&mut out, "tokens", "episode budget", l.tokens);
    headroom(&mut out, "requests", "turn limit", l.turns);
    headroom(
        &mut out,
        "largest completion",
        "completion cap",
        l.completion,
    );
    let _ = writeln!(
        out,
        "  calls the reference program still needed at the end: {}",
        l.calls_needed
    );
    tbb_diag::terminal::escape(&out).into_owned()
}

fn headroom(out: &mut String, what: &str, limit: &str, h: Headroom) {
    let _ = writeln!(
        out,
        "  {what:<19} {:>9} of {:>9} ({limit}): {}",
        count(h.used),
        count(h.limit),
        left(h)
    );
}

/// "3 left", "none left" or "3,072 over".
pub(crate) fn left(h: Headroom) -> String {
    let n = h.left();
    let abs = u64::try_from(n.unsigned_abs()).unwrap_or(u64::MAX);
    match n {
        0 => "none left".to_string(),
        n if n > 0 => format!("{} left", count(abs)),
        _ => format!("{} over", count(abs)),
    }
}

fn short(key: &str) -> &str {
    &key[..super::PAGE_PREFIX.min(key.len())]
}

fn indented(out: &mut String, text: &str, by: usize) {
    if text.is_empty() {
        let _ = writeln!(out, "{:by$}(empty)", "");
    }
    for line in text.lines() {
        let _ = writeln!(out, "{:by$}{line}", "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_reads_as_left_none_or_over() {
        assert_eq!(left(Headroom { limit: 8, used: 5 }), "3 left");
        assert_eq!(left(Headroom { limit: 8, used: 8 }), "none left");
        assert_eq!(
            left(Headroom {
                limit: 128_000,
                used: 131_072
            }),
            "3,072 over"
        );
    }
}
