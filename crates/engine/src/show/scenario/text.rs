//! A played scenario as plain text: what it is, every request's new messages and its
//! response, a live user's exchanges, and the grade.
//!
//! Never: decides anything; every word is a field of the view.

use std::fmt::Write as _;

use tbb_provider::Message;

use super::{Exchange, Reply, ScenarioView};

/// The text of `v`.
pub fn render(v: &ScenarioView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", v.id);
    let _ = writeln!(out, "key {}", v.key);
    let _ = writeln!(out, "{}", v.about);
    exchanges(&mut out, "request", &v.agent);
    for m in &v.trailing {
        message(&mut out, m);
    }
    let _ = writeln!(out, "\nstopped: {}", v.stopped);
    if let Some(user) = &v.user {
        let _ = writeln!(out, "a live user was asked {} times", user.len());
        exchanges(&mut out, "user request", user);
        out.push('\n');
    }
    let g = &v.grade;
    let _ = writeln!(
        out,
        "grade (from the saved world): similarity {} ({}){}, {} turns",
        g.similarity,
        if g.success { "success" } else { "failure" },
        if g.minefield_hit {
            ", a minefield was hit"
        } else {
            ""
        },
        g.turns
    );
    for (k, m) in g.milestones.iter().enumerate() {
        let _ = match m {
            Some((message, similarity)) => writeln!(
                out,
                "  milestone {k}: message {message}, similarity {similarity}"
            ),
            None => writeln!(out, "  milestone {k}: not matched"),
        };
    }
    out
}

fn exchanges(out: &mut String, label: &str, exchanges: &[Exchange]) {
    for (i, x) in exchanges.iter().enumerate() {
        let _ = writeln!(out, "\n{label} {}", i + 1);
        for m in &x.messages {
            message(out, m);
        }
        match &x.outcome {
            Reply::Response {
                finish,
                usage,
                text,
                calls,
            } => {
                let usage = super::usage_phrase(*usage, |n| n.to_string());
                let _ = writeln!(out, "  response ({finish}; {usage}):");
                if let Some(text) = text {
                    indented(out, text);
                }
                for (name, arguments) in calls {
                    let _ = writeln!(out, "    call {name}({arguments})");
                }
            }
            Reply::Failed { attempts, error } => {
                let _ = writeln!(out, "  no response after {attempts} attempts: {error}");
            }
        }
    }
}

fn message(out: &mut String, m: &Message) {
    let (who, text, calls) = super::parts(m);
    let _ = writeln!(out, "  {who}:");
    if let Some(text) = text {
        indented(out, text);
    }
    for (name, arguments) in calls {
        let _ = writeln!(out, "    call {name}({arguments})");
    }
}

fn indented(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "    {line}");
    }
}
