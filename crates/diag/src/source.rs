//! What a diagnostic shows of a user's file: [`SourceFile`], the one place a file's
//! text becomes a miette source, and [`Snippet`], what one problem shows of it.
//!
//! Owns: the window of an over-long line. A problem on a line longer than
//! [`LONG_LINE`] bytes (or next to one), or with a span longer than that, shows only
//! [`WINDOW`] bytes either side of where it starts, marked `…` where the line goes on,
//! with the file's own line and column in its header. miette's renderer formats the
//! column of a label as a padding width, which panics past 65,535; and a generated file
//! on one line would otherwise be printed whole under every problem. Short lines are
//! shown as before: the whole file's text, shared by every problem of a report (one
//! copy, however many problems).
//!
//! Also: the characters a terminal would act on are shown masked (`?`, byte for byte,
//! see [`crate::terminal::mask_in_place`]), so a file cannot drive the terminal through
//! the lines quoted in its own diagnostics.
//!
//! Never: reads files, or changes what a span points at: only how much around it is
//! shown.

use std::ops::Range;
use std::sync::Arc;

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// Lines longer than this (in bytes) are shown as a window around the problem.
pub const LONG_LINE: usize = 400;

/// Bytes of a long line shown before the problem's start, and after its marked part.
pub const WINDOW: usize = 80;

/// Bytes of a long span that are marked (the rest of the span is not shown).
pub const MARKED: usize = 80;

/// A user file's name and text, shared (cheaply cloned) by every problem found in it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    name: Arc<str>,
    /// The text as shown: the file's, masked where a terminal would act on it.
    shown: Arc<str>,
}

impl SourceFile {
    /// A file called `name` (as messages name it) holding `text`.
    pub fn new(name: impl AsRef<str>, text: &str) -> SourceFile {
        SourceFile {
            name: Arc::from(name.as_ref()),
            shown: Arc::from(crate::terminal::mask_in_place(text).as_ref()),
        }
    }

    /// The file's text as diagnostics show it (masked where a terminal would act on
    /// it; the same length as the file's).
    pub fn text(&self) -> &str {
        &self.shown
    }

    /// [`SourceFile::at`] for a problem that has a place in the file.
    pub fn at_span(&self, span: Range<usize>) -> (Snippet, SourceSpan) {
        let (snippet, span) = self.at(Some(span));
        (snippet, span.unwrap_or_else(|| (0, 0).into()))
    }

    /// The source and the span a problem at `span` (a byte range of the file) shows:
    /// the whole file and the span as it is, or, around a long line or span, a window
    /// of the line and the span within it. `None` (a problem with no place in the
    /// file) shows nothing of it.
    pub fn at(&self, span: Option<Range<usize>>) -> (Snippet, Option<SourceSpan>) {
        let whole = Snippet {
            name: self.name.clone(),
            text: self.shown.clone(),
            line: 0,
            column: 0,
            prefix: 0,
        };
        let Some(span) = span else {
            return (whole, None);
        };
        let text: &str = &self.shown;
        let start = floor_boundary(text, span.start.min(text.len()));
        let end = ceil_boundary(text, span.end.clamp(start, text.len()));
        let first_line = line_start(text, start);
        let last_line_end = line_end(text, floor_boundary(text, end.saturating_sub(1)).max(start));
        // The lines miette shows: the span's, and one line of context either side.
        let context = line_start(text, first_line.saturating_sub(1))
            ..line_end(text, (last_line_end + 1).min(text.len()));
        let long_line = text[context].split('\n').any(|line| line.len() > LONG_LINE);
        if !long_line && end - start <= LONG_LINE {
            return (whole, Some((start..end).into()));
        }
        let mut line_stop = line_end(text, start);
        if text[..line_stop].ends_with('\r') {
            line_stop -= 1;
        }
        let line_stop = line_stop.max(start);
        let mark_end = floor_boundary(text, end.min(line_stop).min(start + MARKED)).max(start);
        let from = ceil_boundary(text, start.saturating_sub(WINDOW).max(first_line));
        let to = floor_boundary(text, (mark_end + WINDOW).min(line_stop)).max(mark_end);
        let (before, after) = (
            if from > first_line { "…" } else { "" },
            if to < line_stop { "…" } else { "" },
        );
        let excerpt = format!("{before}{}{after}", &text[from..to]);
        let line = text.as_bytes()[..first_line]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        let snippet = Snippet {
            name: self.name.clone(),
            text: Arc::from(excerpt),
            line,
            column: from - first_line,
            prefix: before.len(),
        };
        let span = before.len() + (start - from)..before.len() + (mark_end - from);
        (snippet, Some(span.into()))
    }

    /// An empty source with this file's name, for an entry that points nowhere.
    pub fn nowhere(name: impl AsRef<str>) -> Snippet {
        Snippet {
            name: Arc::from(name.as_ref()),
            text: Arc::from(""),
            line: 0,
            column: 0,
            prefix: 0,
        }
    }
}

/// What one problem shows of a file: the whole text, or a window of one line, with
/// where it starts in the file. A miette [`SourceCode`].
#[derive(Debug, Clone)]
pub struct Snippet {
    name: Arc<str>,
    text: Arc<str>,
    /// The file's line (0-based) the text starts on.
    line: usize,
    /// The file's byte column the window starts at.
    column: usize,
    /// Bytes of the `…` before the window (not in the file).
    prefix: usize,
}

impl Snippet {
    /// The text shown (a window of a long line, or the whole file).
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        let column = if inner.line() == 0 {
            (inner.column() + self.column).saturating_sub(self.prefix)
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            inner.data(),
            *inner.span(),
            inner.line() + self.line,
            column,
            inner.line_count(),
        )))
    }
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(source: &SourceFile, span: Range<usize>) -> String {
        let (src, span) = source.at(Some(span));
        let problem = miette::MietteDiagnostic::new("bad value").with_label(
            miette::LabeledSpan::at(span.unwrap_or((0, 0).into()), "here"),
        );
        let report = miette::Report::new(problem).with_source_code(src);
        let mut out = String::new();
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
        let _ = handler.render_report(&mut out, report.as_ref());
        out
    }

    #[test]
    fn a_problem_past_column_65535_shows_a_window_with_the_files_line_and_column() {
        let long = format!(
            "name = \"x\"\nlist = [{}\"oops\"]\nend = 1\n",
            "1, ".repeat(30_000)
        );
        let at = long.find("\"oops\"").unwrap_or(0);
        let source = SourceFile::new("m.toml", &long);
        let shown = render(&source, at..at + 6);
        assert!(shown.len() < 2_000, "{} bytes", shown.len());
        assert!(
            shown.contains(&format!("[m.toml:2:{}]", at - 11 + 1)),
            "{shown}"
        );
        assert!(
            shown.contains(" │ …, 1, 1") && shown.contains("\"oops\"]"),
            "{shown}"
        );
    }

    #[test]
    fn short_lines_show_the_whole_file_and_the_span_as_it_is() {
        let text = "a = 1\nb = \"two\"\nc = 3\n";
        let source = SourceFile::new("f.toml", text);
        let (src, span) = source.at(Some(10..15));
        assert_eq!(src.text(), text);
        assert_eq!(span, Some((10..15).into()));
        assert!(render(&source, 10..15).contains("[f.toml:2:5]"));
    }

    #[test]
    fn a_long_span_is_marked_at_its_start_only() {
        let text = format!("a = \"{}\"\n", "z".repeat(100_000));
        let source = SourceFile::new("f.toml", &text);
        let (src, span) = source.at(Some(4..text.len() - 1));
        assert!(src.text().len() < 400);
        assert_eq!(span.map(|s| s.len()), Some(MARKED));
        assert!(render(&source, 4..text.len() - 1).len() < 2_000);
    }
}
