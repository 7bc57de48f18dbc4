//! One episode as a self-contained HTML page (`tbb show --html`, and the pages the
//! report links to under `outputs/<study>/episodes/`).
//!
//! Owns: the page's layout and inline style sheet, and the markers the headless
//! browser check (`scripts/check_show.py`) relies on: `<main class="episode"
//! data-key="…" data-requests="N" data-observations="M">`, each observation a
//! `<details class="observation">` (closed; its summary names the tool and who issued
//! the call), and the obligations as `<tr class="obligation met|unmet">`, the first
//! unmet one also `first-unmet` with the id `first-unmet`.
//!
//! A page in the study's outputs links back to its report and to the index of every
//! episode (`episodes.html`, written with the report).
//!
//! Invariants: no external resource and no JavaScript (the report's rule); every text
//! from a model, a tool, a prompt or a manifest is escaped with the report's
//! `escape`; the page is a pure function of the view.
//!
//! Never: decides anything; every word is a field of the view.

use std::fmt::Write as _;

use super::matched::Matched;
use super::text::left;
use super::{EpisodeView, Headroom, Outcome};
use tbb_core::grade::TerminalFlag;
use tbb_report::format::count;
use tbb_report::html::escape;

pub(crate) const STYLE: &str = "\
body{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;\
margin:0;color:#1a1a1a;background:#fff;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:1.5rem}
h1{font-size:1.5rem;margin-top:.5rem}
h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.9rem}
th,td{padding:.2rem .6rem;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}
th{background:#f4f4f4;font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem;border-radius:4px;\
font-size:.85rem;margin:.3rem 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em}
.exchange{border-left:3px solid #c8d3e0;padding:.2rem 0 .2rem .9rem;margin:1.2rem 0}
.exchange h3{margin:.2rem 0;font-size:1.05rem}
.meta{color:#555;font-size:.9rem}
details.observation{margin:.4rem 0;border:1px solid #e0e0e0;border-radius:4px;padding:.2rem .5rem}
details.observation summary{cursor:pointer}
.by-controller summary{color:#6a3d9a}
tr.unmet td{color:#8a1c1c}
tr.first-unmet{background:#fde2e1;font-weight:600}
tr.first-unmet td{border-top:2px solid #c62828;border-bottom:2px solid #c62828}
.verdict-pass{color:#1b5e20}
.verdict-fail{color:#b71c1c}
.failed{color:#b71c1c}
";

/// Where a page sits: in a folder of the study's outputs (`episodes/` or `show/`),
/// whose parent holds `report.html` and `episodes.html`, or anywhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed<'a> {
    /// One folder below the study's report: the page links back to it and to the
    /// index of every episode, and to its matched episodes' pages beside it.
    InStudy {
        /// The matched episodes whose pages sit beside this one.
        matched: &'a [Matched],
    },
    /// Where its reader asked (`tbb show --html PATH`): no links that may not resolve.
    Elsewhere,
}

/// The page of one episode.
pub fn render(v: &EpisodeView, placed: Placed<'_>) -> String {
    let mut out = String::new();
    let title = format!(
        "Episode {} of study {}",
        &v.key[..super::PAGE_PREFIX.min(v.key.len())],
        v.study
    );
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = write!(
        out,
        "<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    let observations: usize = v.exchanges.iter().map(|x| x.observations.len()).sum();
    let _ = writeln!(
        out,
        "<main class=\"episode\" data-key=\"{}\" data-requests=\"{}\" data-observations=\"{observations}\">",
        escape(&v.key),
        v.exchanges.len()
    );
    if let Placed::InStudy { matched } = placed {
        out.push_str(
            "<nav class=\"meta\"><a href=\"../report.html\">report</a> · \
             <a href=\"../episodes.html\">every episode</a>",
        );
        if !matched.is_empty() {
            out.push_str(" · the same unit with one pressure changed:");
            for (i, m) in matched.iter().enumerate() {
                let _ = write!(
                    out,
                    "{} <a class=\"matched\" href=\"{}\">{}</a>",
                    if i > 0 { "," } else { "" },
                    escape(&super::page_name(&m.key)),
                    escape(&m.change)
                );
            }
        }
        out.push_str("</nav>\n");
    }
    let _ = writeln!(out, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(out, "<p class=\"meta\"><code>{}</code></p>", escape(&v.id));

    // Verdict first: the reason a reader opens the page.
    verdict(&mut out, v);

    out.push_str("<h2 id=\"identity\">Episode</h2>\n<table>\n<tbody>\n");
    let _ = writeln!(
        out,
        "<tr><th>key</th><td><code>{}</code></td></tr>",
        escape(&v.key)
    );
    let _ = writeln!(
        out,
        "<tr><th>grade node</th><td><code>{}</code></td></tr>",
        escape(&v.grade_key)
    );
    for (name, value) in &v.identity {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("</tbody>\n</table>\n");

    out.push_str("<h2 id=\"prompt\">System prompt and request</h2>\n");
    if v.system_prompt.is_empty() {
        out.push_str("<p>No system prompt was sent.</p>\n");
    } else {
        let _ = writeln!(
            out,
            "<details class=\"system-prompt\"><summary>System prompt <code>{}</code> ({} characters)</summary>\n<pre>{}</pre>\n</details>",
            escape(&v.system_prompt),
            count(v.system_text.chars().count() as u64),
            escape(&v.system_text)
        );
    }
    let _ = writeln!(
        out,
        "<p>User request:</p>\n<pre class=\"user-request\">{}</pre>",
        escape(&v.user_request)
    );

    out.push_str("<h2 id=\"exchanges\">Requests</h2>\n");
    if v.exchanges.is_empty() {
        out.push_str("<p>No request was sent.</p>\n");
    }
    for x in &v.exchanges {
        let _ = writeln!(
            out,
            "<section class=\"exchange\" id=\"request-{}\">",
            x.number
        );
        for m in &x.harness_messages {
            let _ = writeln!(
                out,
                "<p class=\"meta\">Harness message:</p>\n<pre>{}</pre>",
                escape(m)
            );
        }
        let _ = writeln!(
            out,
            "<h3>Request {}</h3>\n<p class=\"meta\">{} tools visible, completion cap {}</p>",
            x.number,
            x.visible_tools,
            count(u64::from(x.max_completion_tokens))
        );
        match &x.outcome {
            Outcome::Failed { error, attempts } => {
                let _ = writeln!(
                    out,
                    "<p class=\"failed\">No response after {attempts} attempts: {}</p>",
                    escape(error)
                );
            }
            Outcome::Response(r) => {
                let reasoning = r.reasoning_label();
                let _ = writeln!(
                    out,
                    "<p class=\"response\">Response: finish <code>{}</code> (<code>{}</code>); {} prompt ({} cached), {} completion, {}</p>",
                    escape(r.finish.name()),
                    escape(r.finish_raw_label()),
                    count(r.input_tokens),
                    count(r.cached_tokens),
                    count(r.output_tokens),
                    escape(&reasoning)
                );
                if let Some(t) = &r.text {
                    let _ = writeln!(out, "<pre class=\"text\">{}</pre>", escape(t));
                }
                for (id, name, args) in &r.tool_calls {
                    let _ = writeln!(
                        out,
                        "<p class=\"tool-call\">Tool call <code>{}</code> <span class=\"meta\">({})</span></p>\n<pre>{}</pre>",
                        escape(name),
                        escape(id),
                        escape(args)
                    );
                }
                if let Some(why) = &r.violation {
                    let _ = writeln!(
                        out,
                        "<p class=\"failed\">Protocol violation: {}</p>",
                        escape(why)
                    );
                }
            }
        }
        for o in &x.observations {
            let _ = writeln!(
                out,
                "<details class=\"observation by-{}\"><summary>Observation of <code>{}</code> ({}), issued by the {}, {} characters</summary>",
                o.by,
                escape(&o.tool),
                escape(&o.call_id),
                o.by,
                count(o.text.chars().count() as u64)
            );
            if o.by != "model" {
                let _ = writeln!(
                    out,
                    "<p class=\"meta\">Arguments:</p>\n<pre>{}</pre>",
                    escape(&o.arguments)
                );
            }
            let _ = writeln!(out, "<pre>{}</pre>\n</details>", escape(&o.text));
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn verdict(out: &mut String, v: &EpisodeView) {
    let verdict = &v.verdict;
    out.push_str("<h2 id=\"verdict\">Verdict</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"{}\"><strong>{}</strong>; stop reason <code>{}</code>; first unmet <strong>{}</strong>; terminal flag <strong>{}</strong></p>",
        if verdict.vts { "verdict-pass" } else { "verdict-fail" },
        if verdict.vts { "Verified task success" } else { "Failure" },
        escape(verdict.stop_reason.name()),
        verdict
            .first_unmet
            .map_or("none".to_string(), |o| format!("{o:?}")),
        escape(verdict.terminal_flag.map_or("none", TerminalFlag::name))
    );
    out.push_str("<table class=\"obligations\">\n<thead><tr><th>obligation</th><th>met</th><th>meaning</th></tr></thead>\n<tbody>\n");
    for (o, meaning, ok) in &verdict.obligations {
        let first = verdict.first_unmet == Some(*o);
        let _ = writeln!(
            out,
            "<tr class=\"obligation {}{}\"{} data-obligation=\"{o:?}\"><td>{o:?}</td><td>{}</td><td>{}</td></tr>",
            if *ok { "met" } else { "unmet" },
            if first { " first-unmet" } else { "" },
            if first { " id=\"first-unmet\"" } else { "" },
            if *ok { "yes" } else if first { "no (first unmet)" } else { "no" },
            escape(meaning)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if let Some(f) = &verdict.infra {
        let _ = writeln!(
            out,
            "<p class=\"failed\">Infrastructure failure: <code>{}</code> after {} attempts, last HTTP status {}: {}</p>",
            escape(f.cause.name()),
            f.attempts,
            f.http_status.map_or("none".to_string(), |s| s.to_string()),
            escape(&f.message)
        );
    }
    for e in &verdict.integrity_errors {
        let _ = writeln!(out, "<p class=\"failed\">Integrity: {}</p>", escape(e));
    }
    if let Some(a) = &verdict.final_answer {
        let _ = writeln!(
            out,
            "<p>Final answer:</p>\n<pre class=\"final-answer\">{}</pre>",
            escape(a)
        );
    }

    let l = &v.limits;
    let _ = writeln!(
        out,
        "<p class=\"limit-fired\">Limit: {}</p>",
        escape(
            l.fired
                .as_deref()
                .unwrap_or("none fired (the episode answered)")
        )
    );
    out.push_str("<table class=\"limits\">\n<thead><tr><th>limit</th><th class=\"num\">used</th><th class=\"num\">limit</th><th>headroom</th></tr></thead>\n<tbody>\n");
    let row = |out: &mut String, name: &str, h: Headroom| {
        let _ = writeln!(
            out,
            "<tr><td>{name}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            count(h.used),
            count(h.limit),
            left(h)
        );
    };
    row(out, "calls (call limit)", l.calls);
    row(out, "tokens (episode budget)", l.tokens);
    row(out, "requests (turn limit)", l.turns);
    row(out, "largest completion (completion cap)", l.completion);
    out.push_str("</tbody>\n</table>\n");
    let _ = writeln!(
        out,
        "<p class=\"meta\">Calls the reference program still needed at the end: {}</p>",
        l.calls_needed
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::show::{Exchange, LimitsView, Observation, ResponseView, VerdictView};
    use tbb_core::grade::trace::{FinishReason, StopReason};
    use tbb_core::grade::Obligation;

    #[test]
    fn model_and_tool_text_cannot_open_a_tag_and_the_first_unmet_row_is_marked() {
        let evil = "<script>alert('x')</script>&\"";
        let h = |limit, used| Headroom { limit, used };
        let view = EpisodeView {
            study: "s<".into(),
            id: "execute[cfg=<b>]".into(),
            key: "0123456789abcdef".into(),
            grade_key: "fedcba".into(),
            identity: vec![("configuration", evil.into())],
            system_prompt: "base.txt".into(),
            system_text: evil.into(),
            user_request: evil.into(),
            exchanges: vec![Exchange {
                number: 1,
                visible_tools: 8,
                max_completion_tokens: 1024,
                harness_messages: vec![evil.into()],
                outcome: Outcome::Response(ResponseView {
                    finish: FinishReason::ToolCalls,
                    finish_raw: evil.into(),
                    input_tokens: 1,
                    cached_tokens: 0,
                    output_tokens: 2,
                    reasoning_tokens: None,
                    reasoning_reported: false,
                    text: Some(evil.into()),
                    tool_calls: vec![(evil.into(), evil.into(), evil.into())],
                    violation: Some(evil.into()),
                }),
                observations: vec![Observation {
                    call_id: evil.into(),
                    by: "controller",
                    tool: evil.into(),
                    arguments: evil.into(),
                    text: evil.into(),
                }],
            }],
            verdict: VerdictView {
                vts: false,
                obligations: vec![
                    (Obligation::A, "a", true),
                    (Obligation::S, "s", false),
                    (Obligation::P, "p", false),
                ],
                first_unmet: Some(Obligation::S),
                terminal_flag: Some(TerminalFlag::WrongConclusion),
                stop_reason: StopReason::Answer,
                infra: None,
                integrity_errors: vec![evil.into()],
                final_answer: Some(evil.into()),
            },
            limits: LimitsView {
                fired: Some(evil.into()),
                calls: h(4, 1),
                tokens: h(100, 3),
                turns: h(6, 1),
                completion: h(1024, 2),
                calls_needed: 1,
            },
        };
        let matched = [Matched {
            change: "v = 8".into(),
            key: "0123456789abcdef".into(),
        }];
        let page = render(&view, Placed::InStudy { matched: &matched });
        assert!(!page.contains("<script"), "{page}");
        // In the study's outputs it links back; where its reader put it, it does not.
        assert!(page.contains("<a href=\"../report.html\">report</a>"));
        assert!(page.contains("<a href=\"../episodes.html\">every episode</a>"));
        assert!(page.contains("<a class=\"matched\" href=\"0123456789ab.html\">v = 8</a>"));
        let elsewhere = render(&view, Placed::Elsewhere);
        assert!(!elsewhere.contains("../report.html") && !elsewhere.contains("<nav"));
        assert!(!page.contains("<b>"));
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
        assert_eq!(page.matches("id=\"first-unmet\"").count(), 1);
        assert!(page.contains(
            "<tr class=\"obligation unmet first-unmet\" id=\"first-unmet\" data-obligation=\"S\">"
        ));
        assert!(page.contains("<tr class=\"obligation unmet\" data-obligation=\"P\">"));
        assert!(page.contains("data-observations=\"1\""));
        assert!(page.contains("<details class=\"observation by-controller\">"));
    }
}
