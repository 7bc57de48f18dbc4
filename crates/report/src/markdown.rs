//! Writes a [`Document`] as GitHub-flavoured Markdown (`report.md`).
//!
//! Owns: Markdown escaping and layout. Figures are not embedded: each is referenced by
//! the file name of its standalone SVG, which the caller writes beside `report.md`
//! (see [`super::Rendered::figures`]); `report.html` has them inline.
//!
//! Invariants: the output is a pure function of the document; lines end in `\n`;
//! every text from the tables is escaped, so it cannot open a link, emphasis or a
//! table cell.
//!
//! Never: formats numbers or decides content.

use super::document::{Align, Block, Document, Inline, Table};

/// The Markdown text of `doc`.
pub(crate) fn write(doc: &Document) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# ToolBottleneckBench report: {}\n\n",
        escape(&doc.study)
    ));
    for paragraph in &doc.preamble {
        out.push_str(&inlines(paragraph));
        out.push_str("\n\n");
    }
    for note in &doc.omitted {
        out.push_str(&format!("- *{}*\n", inlines(note)));
    }
    if !doc.omitted.is_empty() {
        out.push('\n');
    }
    if !doc.sections.is_empty() {
        out.push_str("Contents:\n\n");
        for section in &doc.sections {
            out.push_str(&format!("- [{}](#{})\n", escape(section.title), section.id));
        }
        out.push('\n');
    }
    let (mut tables, mut figures) = (0, 0);
    for section in &doc.sections {
        out.push_str(&format!("## {}\n\n", escape(section.title)));
        for block in &section.blocks {
            match block {
                Block::Heading(h) => out.push_str(&format!("### {}\n\n", escape(h))),
                Block::Paragraph(p) => {
                    out.push_str(&inlines(p));
                    out.push_str("\n\n");
                }
                Block::Note(p) => out.push_str(&format!("*{}*\n\n", inlines(p))),
                Block::Table(t) => {
                    tables += 1;
                    out.push_str(&table(tables, t));
                }
                Block::Figure(f) => {
                    figures += 1;
                    out.push_str(&format!(
                        "![Figure {figures}]({})\n\n*Figure {figures}.* {}\n\n",
                        f.file_name,
                        escape(&f.caption)
                    ));
                }
            }
        }
    }
    // One newline at the end of the file, not a blank line.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn table(number: usize, t: &Table) -> String {
    let mut out = format!("**Table {number}.** {}\n\n", escape(&t.caption));
    let row = |cells: &mut dyn Iterator<Item = String>| {
        let mut line = String::from("|");
        for cell in cells {
            line.push(' ');
            line.push_str(&cell);
            line.push_str(" |");
        }
        line.push('\n');
        line
    };
    out.push_str(&row(&mut t.header.iter().map(|h| cell(h))));
    out.push_str(&row(&mut t.align.iter().map(|a| {
        match a {
            Align::Left => ":---",
            Align::Right => "---:",
        }
        .to_string()
    })));
    for r in &t.rows {
        out.push_str(&row(&mut r.iter().map(|c| cell(c))));
    }
    out.push('\n');
    out
}

/// Text inside a table cell: escaped, on one line.
fn cell(s: &str) -> String {
    escape(&s.replace('\n', " "))
}

fn inlines(parts: &[Inline]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Inline::Text(t) => escape(t),
            Inline::Code(c) => code_span(c),
            Inline::Link { text, href } => format!("[{}]({href})", code_span(text)),
        })
        .collect()
}

/// A code span (paragraphs only: cells hold plain text); a name holding a backtick
/// gets a longer fence.
fn code_span(s: &str) -> String {
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

/// Escapes what could start Markdown syntax inside a line: emphasis (`*`, `_`), code
/// (`` ` ``), raw HTML (`<`, `>`), table cells (`|`), the backslash itself, a heading
/// (`#` at the start), and links — by the `](` that every inline link and image
/// needs, since the report defines no reference links. Brackets alone stay as they
/// are, so intervals read `[-14.6, -9.9]` in the source too.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut previous = None;
    for (i, c) in s.chars().enumerate() {
        let special = matches!(c, '\\' | '`' | '*' | '_' | '<' | '>' | '|')
            || (c == '#' && i == 0)
            || (c == '(' && previous == Some(']'));
        if special {
            out.push('\\');
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_text_cannot_break_out_of_its_cell() {
        assert_eq!(escape("a|b*c_d"), "a\\|b\\*c\\_d");
        assert_eq!(escape("[-1.0, 2.0]"), "[-1.0, 2.0]");
        assert_eq!(escape("[x](http://y)"), "[x]\\(http://y)");
        assert_eq!(escape("#1 of #2"), "\\#1 of #2");
        assert_eq!(cell("x\ny"), "x y");
        assert_eq!(code_span("a`b"), "`` a`b ``");
    }
}
