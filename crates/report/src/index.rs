//! `episodes.html`: every episode of a study on one static page, filterable by
//! configuration, family, cell, arm, verdict and terminal flag, each row linking to its
//! episode's page: the one the report published (`episodes/`), or else where
//! `tbb show --html` writes it on request (`show/`; `--all` with the same filters
//! writes the pages of the rows a reader chose).
//!
//! Owns: the page. Filtering is CSS alone (the report's rule: no JavaScript, nothing
//! loaded): each facet is a group of radio buttons, each row carries one class per
//! facet value, and one rule per value hides the rows without it while that value is
//! checked (`#c3:checked ~ table tbody tr:not(.c3)`), so facets combine. The buttons
//! are hidden siblings that precede the table, worked by their labels: a sibling
//! selector costs a row a few steps, where `main:has(#c3:checked)` made Chromium search
//! the whole page for every row and rule (minutes for the capacity study's 18,144
//! rows). A CSS counter over the rows still shown says how many there are.
//!
//! Never: reads anything but the rows it is given, or decides which pages exist (the
//! report kind lists the keys whose pages the pipeline writes, and the pipeline renders
//! this page when it publishes the report).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use tbb_tables::levels::{Obligation, Routing, TerminalFlag};
use tbb_tables::paths::{PUBLISHED_PAGES, SHOWN_PAGES};
use tbb_tables::rows::EpisodeRow;

use crate::format::count;
use crate::html::escape;

/// The page's file name, beside `report.html`.
pub const FILE: &str = "episodes.html";

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;\
margin:0;color:#1a1a1a;background:#fff;line-height:1.4}
main{max-width:1240px;margin:0 auto;padding:1.5rem 1.25rem;counter-reset:shown}
p{max-width:860px}
fieldset{border:1px solid #ddd;border-radius:4px;margin:.4rem 0;padding:.2rem .6rem;font-size:.85rem}
legend{font-weight:600}
fieldset label{display:inline-block;margin:.1rem .3rem .1rem 0;padding:0 .35rem;white-space:nowrap;\
cursor:pointer;border-radius:3px;border:1px solid #ddd}
input.facet{display:none}
table{border-collapse:collapse;font-size:.82rem;margin-top:.6rem}
th,td{padding:.15rem .45rem;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{background:#f4f4f4;position:sticky;top:0}
.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr{counter-increment:shown}
.pass{color:#1b5e20}
.fail{color:#b71c1c}
a.published{font-weight:700}
.shown{position:sticky;bottom:0;background:#fff;border-top:1px solid #ccc;padding:.3rem 0;margin:0}
.shown::before{content:counter(shown) \" shown of \"}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
";

/// One facet: its legend, the class prefix of its values, and how a row names its value.
struct Facet {
    legend: &'static str,
    prefix: &'static str,
    value: fn(&EpisodeRow) -> String,
}

const FACETS: [Facet; 6] = [
    Facet {
        legend: "Configuration",
        prefix: "c",
        value: |r| r.configuration.to_string(),
    },
    Facet {
        legend: "Family",
        prefix: "f",
        value: |r| r.family.to_string(),
    },
    Facet {
        legend: "Cell",
        prefix: "l",
        value: cell,
    },
    Facet {
        legend: "Arm",
        prefix: "a",
        value: |r| r.arm.to_string(),
    },
    Facet {
        legend: "Verdict",
        prefix: "v",
        value: |r| verdict(r).to_string(),
    },
    Facet {
        legend: "Terminal flag",
        prefix: "t",
        value: |r| {
            r.terminal_flag
                .map_or("none", TerminalFlag::name)
                .to_string()
        },
    },
];

/// The cell's levels, as the report writes them.
fn cell(r: &EpisodeRow) -> String {
    let mut cell = format!("v={} w={} d={}", r.v, r.w, r.d);
    if r.r != Routing::Low {
        let _ = write!(cell, " r={}", r.r);
    }
    if let Some(depth) = r.depth {
        let _ = write!(cell, " depth={depth}");
    }
    cell
}

fn verdict(r: &EpisodeRow) -> &'static str {
    if r.vts {
        "pass"
    } else {
        "fail"
    }
}

/// The page of `rows`, those whose `transcript_ref` is in `paged` linked to
/// `episodes/<key prefix>.html`, as one string ([`write`] streams it).
pub fn render(study: &str, rows: &[EpisodeRow], paged: &HashSet<&str>) -> String {
    let mut out = Vec::with_capacity(512 + rows.len() * 300);
    // Writing to a vector cannot fail, and every part written is a `str`.
    let _ = write(&mut out, study, rows, paged);
    String::from_utf8(out).unwrap_or_default()
}

/// Writes the page of `rows` (see [`render`]) to `out` a row at a time: a string of the
/// whole page was the apply's peak when the report was published (43 MB for the
/// capacity study at four repeats).
pub fn write(
    out: &mut impl std::io::Write,
    study: &str,
    rows: &[EpisodeRow],
    paged: &HashSet<&str>,
) -> std::io::Result<()> {
    // Each facet's values in order, numbered for the classes and ids.
    let values: Vec<BTreeMap<String, usize>> = FACETS
        .iter()
        .map(|facet| {
            let mut seen: BTreeMap<String, usize> =
                rows.iter().map(|r| ((facet.value)(r), 0)).collect();
            for (n, slot) in seen.values_mut().enumerate() {
                *slot = n;
            }
            seen
        })
        .collect();
    let title = format!("Episodes of study {study}");
    out.write_all(b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")?;
    out.write_all(b"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")?;
    write!(out, "<title>{}</title>\n<style>\n{STYLE}", escape(&title))?;
    for (facet, values) in FACETS.iter().zip(&values) {
        let p = facet.prefix;
        writeln!(
            out,
            "#{p}-all:checked ~ fieldset label[for={p}-all]{{background:#0072B2;color:#fff}}"
        )?;
        for n in values.values() {
            writeln!(
                out,
                "#{p}{n}:checked ~ table tbody tr:not(.{p}{n}){{display:none}}\n\
                 #{p}{n}:checked ~ fieldset label[for={p}{n}]{{background:#0072B2;color:#fff}}"
            )?;
        }
    }
    out.write_all(b"</style>\n</head>\n<body>\n")?;
    writeln!(
        out,
        "<main class=\"episode-index\" data-episodes=\"{}\">",
        rows.len()
    )?;
    writeln!(out, "<h1>{}</h1>", escape(&title))?;
    writeln!(
        out,
        "<p><a href=\"report.html\">The report</a>. Every episode of the study, {} in all; \
         choose a value of any facet to show only its rows. A key in bold opens the \
         page the report published; any other key links to <code>show/</code>, where \
         <code>tbb show &lt;manifest&gt; &lt;key&gt; --html</code> writes its page, and \
         <code>tbb show &lt;manifest&gt; --all --html</code> with the filters you chose \
         as flags (<code>--config</code>, <code>--family</code>, <code>--v</code>, \
         <code>--w</code>, <code>--d</code>, <code>--arm</code>, <code>--verdict</code>, \
         <code>--flag</code>) writes the page of every row shown.</p>",
        count(rows.len() as u64)
    )?;
    // The buttons first, siblings of the fieldsets and the table their rules reach.
    for (facet, values) in FACETS.iter().zip(&values) {
        let p = facet.prefix;
        write!(
            out,
            "<input class=\"facet\" type=\"radio\" name=\"{p}\" id=\"{p}-all\" checked>"
        )?;
        for n in values.values() {
            write!(
                out,
                "<input class=\"facet\" type=\"radio\" name=\"{p}\" id=\"{p}{n}\">"
            )?;
        }
        out.write_all(b"\n")?;
    }
    for (facet, values) in FACETS.iter().zip(&values) {
        let p = facet.prefix;
        write!(
            out,
            "<fieldset><legend>{}</legend><label for=\"{p}-all\">all</label>",
            facet.legend
        )?;
        for (value, n) in values {
            write!(out, "<label for=\"{p}{n}\">{}</label>", escape(value))?;
        }
        out.write_all(b"</fieldset>\n")?;
    }
    out.write_all(
        b"<table>\n<thead>\n<tr><th>Key</th><th>Configuration</th><th>Family</th><th>Cell</th>\
         <th>Arm</th><th class=\"num\">Cap</th><th class=\"num\">Repeat</th><th>Verdict</th>\
         <th>First unmet</th><th>Terminal flag</th><th class=\"num\">Calls</th>\
         <th class=\"num\">Requests</th></tr>\n</thead>\n<tbody>\n",
    )?;
    for r in rows {
        out.write_all(b"<tr class=\"")?;
        for (i, (facet, values)) in FACETS.iter().zip(&values).enumerate() {
            let n = values.get(&(facet.value)(r)).copied().unwrap_or(0);
            write!(out, "{}{}{n}", if i > 0 { " " } else { "" }, facet.prefix)?;
        }
        let page = tbb_tables::paths::episode_page(&r.transcript_ref);
        let key = escape(page.trim_end_matches(".html"));
        let key_cell = if paged.contains(&*r.transcript_ref) {
            format!(
                "<a class=\"published\" href=\"{PUBLISHED_PAGES}/{}\"><code>{key}</code></a>",
                escape(&page)
            )
        } else {
            format!(
                "<a href=\"{SHOWN_PAGES}/{}\"><code>{key}</code></a>",
                escape(&page)
            )
        };
        let v = verdict(r);
        writeln!(
            out,
            "\"><td>{key_cell}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{v}\">{v}</td>\
             <td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&r.configuration),
            escape(&r.family),
            escape(&cell(r)),
            escape(&r.arm),
            count(u64::from(r.completion_cap)),
            r.repeat,
            escape(r.first_unmet.map_or("", Obligation::name)),
            escape(r.terminal_flag.map_or("", TerminalFlag::name)),
            r.calls,
            r.requests,
        )?;
    }
    writeln!(
        out,
        "</tbody>\n</table>\n<p class=\"shown\">{} episodes</p>\n</main>\n</body>\n</html>",
        count(rows.len() as u64)
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(configuration: &str, family: &str, v: u32, vts: bool, key: &str) -> EpisodeRow {
        let mut r = tbb_analysis::common::design::testing::row(
            configuration,
            "o",
            family,
            "i",
            v,
            "low",
            "raw",
            vts,
        );
        r.terminal_flag = (!vts).then_some(TerminalFlag::BudgetOrCallLimit);
        r.transcript_ref = key.into();
        r
    }

    #[test]
    fn every_row_carries_a_class_per_facet_and_each_value_a_rule_that_hides_the_others() {
        let rows = [
            row("sim-a", "harbor", 8, true, "aaaa1111"),
            row("sim-b", "harbor", 128, false, "bbbb2222"),
            row("sim-a", "<script>", 128, false, "cccc3333"),
        ];
        let paged: HashSet<&str> = ["bbbb2222"].into_iter().collect();
        let page = render("capacity", &rows, &paged);
        // Values are numbered in sorted order per facet: configurations sim-a (c0),
        // sim-b (c1); families "<script>" (f0), harbor (f1); cells v=128 (l0), v=8 (l1);
        // verdicts fail (v0), pass (v1); flags budget_or_call_limit (t0), none (t1).
        assert!(page.contains("#c1:checked ~ table tbody tr:not(.c1){display:none}"));
        assert!(page.contains("<input class=\"facet\" type=\"radio\" name=\"c\" id=\"c1\">"));
        assert!(page.contains("<label for=\"c1\">sim-b</label>"));
        assert!(page.contains("<tr class=\"c0 f1 l1 a0 v1 t1\">"), "{page}");
        assert!(page.contains("<tr class=\"c1 f1 l0 a0 v0 t0\">"));
        assert!(page.contains("<tr class=\"c0 f0 l0 a0 v0 t0\">"));
        // An episode with a published page links to it; any other to where `tbb show
        // --html` writes it. Every text is escaped.
        assert!(page.contains(
            "<a class=\"published\" href=\"episodes/bbbb2222.html\"><code>bbbb2222</code></a>"
        ));
        assert!(page.contains("<td><a href=\"show/aaaa1111.html\"><code>aaaa1111</code></a></td>"));
        assert!(!page.contains("<script>") && page.contains("&lt;script&gt;"));
        assert!(page.contains("data-episodes=\"3\""));
        assert_eq!(page.matches("<tr class=").count(), 3);
    }
}
