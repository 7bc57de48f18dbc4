//! The report as a format-neutral document: sections of paragraphs, tables and
//! figures, built once from the analysis tables and written by [`super::markdown`]
//! and [`super::html`].
//!
//! Owns: the structure both outputs share — section order, table and figure
//! numbering (by position, counted the same way by both writers), captions, and
//! which text is code (table and column names).
//!
//! Invariants: every string here is plain text; each writer escapes it for its own
//! format, so a configuration name with `|` or `<` cannot break either output.
//!
//! Never: formats numbers (see [`super::format`]) or knows about Markdown or HTML.

/// A piece of running text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Inline {
    /// Plain text.
    Text(String),
    /// A name to show as code (a table, column or manifest key).
    Code(String),
    /// A link to a file the report publishes beside itself (a relative path), shown
    /// as code.
    Link {
        /// The text shown.
        text: String,
        /// The relative path.
        href: String,
    },
}

/// Plain text.
pub(crate) fn text(s: impl Into<String>) -> Inline {
    Inline::Text(s.into())
}

/// A code name.
pub(crate) fn code(s: impl Into<String>) -> Inline {
    Inline::Code(s.into())
}

/// Column alignment: numbers right, names left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Names.
    Left,
    /// Numbers.
    Right,
}

/// A table of formatted cells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    /// What the table shows (the writers prefix "Table n.").
    pub caption: String,
    /// Column headings.
    pub header: Vec<String>,
    /// One alignment per column.
    pub align: Vec<Align>,
    /// Rows of cells, each as long as `header`.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with `columns` given as (heading, alignment).
    pub(crate) fn new(caption: impl Into<String>, columns: &[(&str, Align)]) -> Table {
        Table {
            caption: caption.into(),
            header: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|&(_, a)| a).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a column after construction (for column sets that depend on the data).
    pub(crate) fn push_column(&mut self, heading: impl Into<String>, align: Align) {
        self.header.push(heading.into());
        self.align.push(align);
    }

    /// Appends a row.
    pub(crate) fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.header.len(), "{}", self.caption);
        self.rows.push(row);
    }
}

/// A figure: an SVG drawing with its caption.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// File name of the standalone SVG (`report-….svg`), unique within a report.
    pub file_name: String,
    /// The caption (the writers prefix "Figure n.").
    pub caption: String,
    /// The complete SVG document.
    pub svg: String,
}

/// One block of a section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// A subheading within a section.
    Heading(String),
    /// A paragraph.
    Paragraph(Vec<Inline>),
    /// A one-line note that something is absent or undefined (shown in italics).
    Note(Vec<Inline>),
    /// A table.
    Table(Table),
    /// A figure.
    Figure(Figure),
}

/// A top-level section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Section {
    /// Anchor id: lower-case words joined by `-`, as GitHub derives it from the title.
    pub id: &'static str,
    /// Title.
    pub title: &'static str,
    /// Content.
    pub blocks: Vec<Block>,
}

impl Section {
    /// An empty section.
    pub(crate) fn new(id: &'static str, title: &'static str) -> Section {
        Section {
            id,
            title,
            blocks: Vec::new(),
        }
    }

    /// Appends a subheading.
    pub(crate) fn heading(&mut self, s: impl Into<String>) {
        self.blocks.push(Block::Heading(s.into()));
    }

    /// Appends a paragraph.
    pub(crate) fn paragraph(&mut self, inlines: Vec<Inline>) {
        self.blocks.push(Block::Paragraph(inlines));
    }

    /// Appends a note.
    pub(crate) fn note(&mut self, inlines: Vec<Inline>) {
        self.blocks.push(Block::Note(inlines));
    }

    /// Appends a table.
    pub(crate) fn table(&mut self, table: Table) {
        self.blocks.push(Block::Table(table));
    }

    /// Appends a figure.
    pub(crate) fn figure(&mut self, figure: Figure) {
        self.blocks.push(Block::Figure(figure));
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Document {
    /// The study's name.
    pub study: String,
    /// Paragraphs before the first section.
    pub preamble: Vec<Vec<Inline>>,
    /// Notes on what is absent (one line each), after the preamble.
    pub omitted: Vec<Vec<Inline>>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

impl Document {
    /// Every figure, in document order.
    pub(crate) fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.sections.iter().flat_map(|s| {
            s.blocks.iter().filter_map(|b| match b {
                Block::Figure(f) => Some(f),
                _ => None,
            })
        })
    }
}
