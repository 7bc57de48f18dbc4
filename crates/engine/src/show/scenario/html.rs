//! A played scenario as one self-contained HTML page (`tbb show KEY --html`), laid out
//! as an episode page of tbb's own families is ([`crate::show::html`], whose style
//! sheet it shares): the grade first, then the agent's requests, then a live user's.
//!
//! Markers for a browser check: `<main class="scenario" data-key="…"
//! data-requests="N" data-user-requests="M">`, each request a `<section
//! class="exchange">`, each milestone a `<tr class="milestone matched|unmatched">`.
//!
//! Invariants: no external resource and no JavaScript (the report's rule); every text
//! from a model, a tool, a scenario or a manifest is escaped with the report's
//! `escape`; the page is a pure function of the view.
//!
//! Never: decides anything; every word is a field of the view.

use std::fmt::Write as _;

use tbb_provider::Message;
use tbb_report::format::count;
use tbb_report::html::escape;

use super::{Exchange, Reply, ScenarioView};

/// The page of `v`.
pub fn render(v: &ScenarioView) -> String {
    let mut out = String::new();
    let title = format!(
        "ToolSandbox episode {} of study {}",
        &v.key[..crate::show::PAGE_PREFIX.min(v.key.len())],
        v.study
    );
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = write!(
        out,
        "<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n",
        escape(&title),
        crate::show::html::STYLE
    );
    let _ = writeln!(
        out,
        "<main class=\"scenario\" data-key=\"{}\" data-requests=\"{}\" data-user-requests=\"{}\">",
        escape(&v.key),
        v.agent.len(),
        v.user.as_ref().map_or(0, Vec::len)
    );
    let _ = writeln!(out, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(out, "<p class=\"meta\"><code>{}</code></p>", escape(&v.id));
    let _ = writeln!(out, "<p>{}</p>", escape(&v.about));

    let g = &v.grade;
    out.push_str("<h2 id=\"grade\">Grade, from the saved world</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"{}\">Similarity {} ({}){}; {} turns. Stopped: {}.</p>",
        if g.success {
            "verdict-pass"
        } else {
            "verdict-fail"
        },
        g.similarity,
        if g.success { "success" } else { "failure" },
        if g.minefield_hit {
            ", a minefield was hit"
        } else {
            ""
        },
        g.turns,
        escape(&v.stopped)
    );
    out.push_str(
        "<table>\n<thead><tr><th>milestone</th><th>message</th><th class=\"num\">similarity</th></tr></thead>\n<tbody>\n",
    );
    for (k, m) in g.milestones.iter().enumerate() {
        let _ = match m {
            Some((message, similarity)) => writeln!(
                out,
                "<tr class=\"milestone matched\"><td class=\"num\">{k}</td><td class=\"num\">{message}</td><td class=\"num\">{similarity}</td></tr>"
            ),
            None => writeln!(
                out,
                "<tr class=\"milestone unmatched unmet\"><td class=\"num\">{k}</td><td>not matched</td><td></td></tr>"
            ),
        };
    }
    out.push_str("</tbody>\n</table>\n");

    out.push_str("<h2 id=\"requests\">The agent's requests</h2>\n");
    exchanges(&mut out, "request", "Request", &v.agent);
    if !v.trailing.is_empty() {
        out.push_str("<p class=\"meta\">Then:</p>\n");
        for m in &v.trailing {
            message(&mut out, m);
        }
    }
    if let Some(user) = &v.user {
        out.push_str("<h2 id=\"user-requests\">The live user's requests</h2>\n");
        exchanges(&mut out, "user-request", "User request", user);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn exchanges(out: &mut String, id: &str, label: &str, exchanges: &[Exchange]) {
    if exchanges.is_empty() {
        out.push_str("<p>No request was sent.</p>\n");
    }
    for (i, x) in exchanges.iter().enumerate() {
        let number = i + 1;
        let _ = writeln!(
            out,
            "<section class=\"exchange\" id=\"{id}-{number}\">\n<h3>{label} {number}</h3>"
        );
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
                let usage = super::usage_phrase(*usage, count);
                let _ = writeln!(
                    out,
                    "<p class=\"response\">Response: finish <code>{}</code>; {}</p>",
                    escape(finish),
                    escape(&usage)
                );
                if let Some(t) = text {
                    let _ = writeln!(out, "<pre class=\"text\">{}</pre>", escape(t));
                }
                for (name, arguments) in calls {
                    call(out, name, arguments);
                }
            }
            Reply::Failed { attempts, error } => {
                let _ = writeln!(
                    out,
                    "<p class=\"failed\">No response after {attempts} attempts: {}</p>",
                    escape(error)
                );
            }
        }
        out.push_str("</section>\n");
    }
}

fn message(out: &mut String, m: &Message) {
    let (who, text, calls) = super::parts(m);
    let _ = writeln!(out, "<p class=\"meta\">{}:</p>", escape(&who));
    if let Some(text) = text {
        let _ = writeln!(out, "<pre>{}</pre>", escape(text));
    }
    for (name, arguments) in calls {
        call(out, name, arguments);
    }
}

fn call(out: &mut String, name: &str, arguments: &str) {
    let _ = writeln!(
        out,
        "<p class=\"tool-call\">Tool call <code>{}</code></p>\n<pre>{}</pre>",
        escape(name),
        escape(arguments)
    );
}

#[cfg(test)]
mod tests {
    use super::super::{Exchange, Grade, Reply, ScenarioView};
    use tbb_provider::Message;

    fn view() -> ScenarioView {
        let asked = |text: &str| Exchange {
            messages: vec![Message::User {
                content: text.into(),
            }],
            outcome: Reply::Response {
                finish: "stop".into(),
                usage: Some((1_200, 34)),
                text: Some("<script>alert(1)</script>".into()),
                calls: vec![("set_cellular".into(), "{\"on\": false}".into())],
            },
        };
        ScenarioView {
            study: "ts".into(),
            id: "scenario[cfg=a & b]".into(),
            key: "0123456789abcdef".repeat(4),
            about: "ToolSandbox scenario x".into(),
            agent: vec![
                asked("turn off <cellular>"),
                Exchange {
                    messages: Vec::new(),
                    outcome: Reply::Failed {
                        attempts: 3,
                        error: "timed out".into(),
                    },
                },
            ],
            trailing: Vec::new(),
            user: Some(vec![asked("end?")]),
            stopped: "final_answer; 1 tool calls, 0 further user turns".into(),
            grade: Grade {
                similarity: 0.5,
                success: false,
                minefield_hit: false,
                turns: 3,
                milestones: vec![Some((4, 1.0)), None],
            },
        }
    }

    /// Every text is escaped; a section per request of each party, the user's after
    /// the agent's; a row per milestone, an unmatched one marked; the counts on `main`.
    #[test]
    fn a_scenario_page_escapes_every_text_and_counts_what_it_shows() {
        let page = super::render(&view());
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("turn off &lt;cellular&gt;"));
        assert!(page.contains("scenario[cfg=a &amp; b]"));
        assert!(page.contains(
            "<main class=\"scenario\" data-key=\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\" data-requests=\"2\" data-user-requests=\"1\">"
        ));
        assert_eq!(page.matches("<section class=\"exchange\"").count(), 3);
        let agent = page.find("id=\"request-2\"").unwrap_or(usize::MAX);
        let user = page.find("id=\"user-request-1\"").unwrap_or(0);
        assert!(agent < user);
        assert!(page.contains("No response after 3 attempts: timed out"));
        assert!(page.contains("1,200 prompt, 34 completion tokens"));
        assert_eq!(page.matches("<tr class=\"milestone matched\">").count(), 1);
        assert_eq!(page.matches("<tr class=\"milestone unmatched").count(), 1);
        assert!(page.contains("class=\"verdict-fail\">Similarity 0.5 (failure); 3 turns."));
    }

    /// The text says the same: the user's request after the agent's, the calls, the
    /// grade and each milestone.
    #[test]
    fn a_scenario_prints_the_same_as_text() {
        let text = super::super::text::render(&view());
        let expected_tail = "\nstopped: final_answer; 1 tool calls, 0 further user turns\n\
             a live user was asked 1 times\n\nuser request 1\n  user:\n    end?\n  \
             response (stop; 1200 prompt, 34 completion tokens):\n    <script>alert(1)</script>\n    \
             call set_cellular({\"on\": false})\n\n\
             grade (from the saved world): similarity 0.5 (failure), 3 turns\n  \
             milestone 0: message 4, similarity 1\n  milestone 1: not matched\n";
        assert!(text.ends_with(expected_tail), "{text}");
        assert!(text.contains("\nrequest 2\n  no response after 3 attempts: timed out\n"));
    }
}
