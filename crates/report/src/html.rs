//! Writes a [`Document`] as one self-contained HTML page (`report.html`).
//!
//! Owns: HTML escaping, the page's inline style sheet, and the markers the headless
//! browser check (`scripts/check_report.py`) relies on: `<main data-figures="N">`
//! states how many figures the page holds, and each is a
//! `<figure class="report-figure">` with its SVG inline.
//!
//! Invariants: no external resource (no links to style sheets, fonts, scripts or
//! images) and no JavaScript, so the page renders the same offline, from an archive,
//! or as an e-mail attachment; the output is a pure function of the document. Its only
//! links are relative ones to the episode pages published beside it
//! (`<a class="episode-link" href="episodes/….html">`).
//!
//! Never: formats numbers or decides content.

use super::document::{Align, Block, Document, Inline, Table};

/// The page's style sheet. The column is as wide as a 1,280-pixel window allows, prose
/// keeps a readable measure inside it, and tables fit it: headers wrap at their words,
/// and a cell that holds an estimate and its interval wraps between the two (never
/// inside an interval, [`cell`]) when the table would not fit otherwise. A table that
/// still does not fit scrolls sideways inside its wrapper rather than widening the
/// page; figures scale down to the column width. `scripts/check_report.py` measures
/// every table at 1,280 pixels.
const STYLE: &str = "\
body{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;\
margin:0;color:#1a1a1a;background:#fff;line-height:1.45}
main{max-width:1240px;margin:0 auto;padding:1.5rem 1.25rem}
p,ul,ol{max-width:860px}
h1{font-size:1.6rem;margin-top:.5rem}
h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.4rem}
h3{margin-top:1.8rem}
.table-wrap{overflow-x:auto;margin:.3rem 0 0}
table{border-collapse:collapse;font-size:.88rem}
th,td{padding:.25rem .5rem;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}
th{background:#f4f4f4;font-weight:600;min-width:4.5em}
td:first-child{white-space:nowrap}
.ci{display:block;font-size:.82em;color:#555}
.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafafa}
figure{margin:1.4rem 0}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.9rem;color:#333;max-width:860px;margin-top:.3rem}
.label{font-weight:600}
.note{font-style:italic;color:#555}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;\
background:#f3f3f3;padding:0 .2em;border-radius:3px}
";

/// The HTML page of `doc`.
pub(crate) fn write(doc: &Document) -> String {
    let title = format!("ToolBottleneckBench report: {}", escape(&doc.study));
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<title>{title}</title>\n<style>\n{STYLE}</style>\n"
    ));
    out.push_str("</head>\n<body>\n");
    out.push_str(&format!(
        "<main data-figures=\"{}\">\n<h1>{title}</h1>\n",
        doc.figures().count()
    ));
    for paragraph in &doc.preamble {
        out.push_str(&format!("<p>{}</p>\n", inlines(paragraph)));
    }
    if !doc.omitted.is_empty() {
        out.push_str("<ul class=\"omitted\">\n");
        for note in &doc.omitted {
            out.push_str(&format!("<li class=\"note\">{}</li>\n", inlines(note)));
        }
        out.push_str("</ul>\n");
    }
    if !doc.sections.is_empty() {
        out.push_str("<nav>\n<p>Contents:</p>\n<ul>\n");
        for section in &doc.sections {
            out.push_str(&format!(
                "<li><a href=\"#{}\">{}</a></li>\n",
                section.id,
                escape(section.title)
            ));
        }
        out.push_str("</ul>\n</nav>\n");
    }
    let (mut tables, mut figures) = (0, 0);
    for section in &doc.sections {
        out.push_str(&format!(
            "<section id=\"{}\">\n<h2>{}</h2>\n",
            section.id,
            escape(section.title)
        ));
        for block in &section.blocks {
            match block {
                Block::Heading(h) => out.push_str(&format!("<h3>{}</h3>\n", escape(h))),
                Block::Paragraph(p) => out.push_str(&format!("<p>{}</p>\n", inlines(p))),
                Block::Note(p) => {
                    out.push_str(&format!("<p class=\"note\">{}</p>\n", inlines(p)));
                }
                Block::Table(t) => {
                    tables += 1;
                    out.push_str(&table(tables, t));
                }
                Block::Figure(f) => {
                    figures += 1;
                    out.push_str(&format!(
                        "<figure class=\"report-figure\" id=\"figure-{figures}\" \
                         data-file=\"{}\">\n{}\n<figcaption><span class=\"label\">Figure \
                         {figures}.</span> {}</figcaption>\n</figure>\n",
                        escape(&f.file_name),
                        f.svg.trim_end(),
                        escape(&f.caption)
                    ));
                }
            }
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn table(number: usize, t: &Table) -> String {
    let class = |a: &Align| match a {
        Align::Left => "",
        Align::Right => " class=\"num\"",
    };
    // The caption sits outside the scrolling wrapper, so a table wider than the page
    // scrolls without taking its caption along.
    let mut out = format!(
        "<figure class=\"report-table\" id=\"table-{number}\">\n<figcaption><span \
         class=\"label\">Table {number}.</span> {}</figcaption>\n<div \
         class=\"table-wrap\">\n<table>\n<thead>\n<tr>",
        escape(&t.caption)
    );
    for (h, a) in t.header.iter().zip(&t.align) {
        out.push_str(&format!("<th{}>{}</th>", class(a), escape(h)));
    }
    out.push_str("</tr>\n</thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (c, a) in row.iter().zip(&t.align) {
            out.push_str(&format!("<td{}>{}</td>", class(a), cell(c, a)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n</figure>\n");
    out
}

fn inlines(parts: &[Inline]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Inline::Text(t) => escape(t),
            Inline::Code(c) => format!("<code>{}</code>", escape(c)),
            Inline::Link { text, href } => format!(
                "<a class=\"episode-link\" href=\"{}\"><code>{}</code></a>",
                escape(href),
                escape(text)
            ),
        })
        .collect()
}

/// A table cell's text, escaped. In a number column nothing wraps inside a value (an
/// interval's own space, `14.8% (449/3,024)`), and an estimate with its interval,
/// `-47.9 [-56.2, -39.6]`, is set as the estimate over its interval in every row
/// (wrapping only where the table is tight left its cells ragged).
fn cell(text: &str, align: &Align) -> String {
    let escaped = escape(text);
    let unbroken = |part: &str| part.replace(' ', "&nbsp;");
    match align {
        Align::Left => escaped,
        Align::Right => match escaped.split_once(" [") {
            Some((estimate, interval)) => format!(
                "{}<span class=\"ci\">[{}</span>",
                unbroken(estimate),
                unbroken(interval)
            ),
            None => unbroken(&escaped),
        },
    }
}

/// Escapes text for element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_cell_never_wraps_inside_a_value_and_sets_its_interval_under_it() {
        assert_eq!(
            cell("-47.9 [-56.2, -39.6]", &Align::Right),
            "-47.9<span class=\"ci\">[-56.2,&nbsp;-39.6]</span>"
        );
        assert_eq!(
            cell("14.8% (449/3,024)", &Align::Right),
            "14.8%&nbsp;(449/3,024)"
        );
        assert_eq!(cell("[-13.4, 2.2]", &Align::Right), "[-13.4,&nbsp;2.2]");
        // Text columns wrap at their words, and escaping comes first.
        assert_eq!(
            cell("visible menu (V 128 − 8) <a>", &Align::Left),
            "visible menu (V 128 − 8) &lt;a&gt;"
        );
    }

    #[test]
    fn text_cannot_open_a_tag() {
        assert_eq!(escape("<b>&\"'"), "&lt;b&gt;&amp;&quot;&#39;");
    }
}
