//! The report's sections, one file per analysis: each turns its analysis tables into
//! a [`Section`] of tables, figures and generated sentences.
//!
//! Owns: which tables each section reads ([`SECTIONS`]), the order of the sections,
//! and the helpers they share: the (lane, completion cap) strata and the note for an
//! absent table.
//!
//! Invariants: a section is built when at least one of its tables is present; a part
//! whose table is absent becomes a one-line note in place. Rows are shown in the
//! order the analysis wrote them (the analyses sort their tables), except strata,
//! which put the routed lane first — the paper's primary lane — then the other
//! lanes by name, each by increasing completion cap.
//!
//! Never: computes a statistic, or holds a paper value. Every number in the report is
//! a value of some table (or a count of its rows), or a quote of `paper.rs` labelled
//! as the paper's; a sentence that quotes a number quotes a cell or a quote.

pub(crate) mod cap_strata;
pub(crate) mod cap_studies;
pub(crate) mod configurations;
pub(crate) mod contrasts;
pub(crate) mod costs;
pub(crate) mod decoders;
pub(crate) mod discovery;
pub(crate) mod first_responses;
pub(crate) mod frontier;
pub(crate) mod holdout;
pub(crate) mod interaction_anatomy;
pub(crate) mod lanes;
pub(crate) mod pilot;
pub(crate) mod repairs;
pub(crate) mod repeats;
pub(crate) mod strata;
pub(crate) mod switches;
pub(crate) mod toolsandbox;
pub(crate) mod truncation;

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use tbb_tables::TableRow;

use super::document::{code, text, Inline, Section};
use super::format;
use super::ReportError;

/// The analysis tables by name.
pub(crate) type Tables = BTreeMap<String, RecordBatch>;

/// One section of the report and where its data come from.
pub(crate) struct SectionSpec {
    /// Anchor id.
    pub id: &'static str,
    /// Title.
    pub title: &'static str,
    /// The manifest's analysis kind that writes the tables.
    pub analysis: &'static str,
    /// The tables the section reads (any one present builds it).
    pub tables: &'static [&'static str],
    /// Fills the (empty) section.
    pub build: fn(&Tables, &mut Section) -> Result<(), ReportError>,
    /// Whether the report notes the section as omitted when none of its tables is
    /// there: the capacity analyses' sections, which every study may run; a section of
    /// one kind of study (the cap studies') is left out of the others' without a note.
    pub noted_when_absent: bool,
}

/// Every section, in report order.
pub(crate) const SECTIONS: [SectionSpec; 20] = [
    SectionSpec {
        id: "contrasts",
        title: "Contrasts",
        analysis: "contrasts",
        tables: &[
            "contrasts",
            "contrasts_sign_flip",
            "contrasts_by_configuration",
        ],
        build: contrasts::section,
        noted_when_absent: true,
    },
    SectionSpec {
        id: "truncation",
        title: "Truncation",
        analysis: "truncation",
        tables: &["truncation", "truncation_pairs", "truncation_correlation"],
        build: truncation::section,
        noted_when_absent: true,
    },
    SectionSpec {
        id: "strata-and-bounds",
        title: "Strata and bounds",
        analysis: "strata",
        tables: &["strata"],
        build: strata::section,
        noted_when_absent: true,
    },
    SectionSpec {
        id: "lanes",
        title: "Lanes",
        analysis: "lanes",
        tables: &["lanes"],
        build: lanes::section,
        noted_when_absent: true,
    },
    SectionSpec {
        id: "costs",
        title: "Costs",
        analysis: "costs",
        tables: &["costs"],
        build: costs::section,
        noted_when_absent: true,
    },
    SectionSpec {
        id: "configurations",
        title: "Per configuration (the paper's Table 4)",
        analysis: "configurations",
        tables: &["configurations"],
        build: configurations::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "interaction-anatomy",
        title: "The V × W anatomy",
        analysis: "interaction_anatomy",
        tables: &["interaction_anatomy"],
        build: interaction_anatomy::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "first-responses",
        title: "Reasoning-only first responses",
        analysis: "first_responses",
        tables: &["first_responses"],
        build: first_responses::section,
        noted_when_absent: true,
    },
    SectionSpec {
        id: "decoders-what-a-failure-record-says",
        title: "Decoders: what a failure record says",
        analysis: "decoders",
        tables: &[
            "decoders",
            "decoder_gains",
            "decoder_packets",
            "decoder_multi",
        ],
        build: decoders::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "cap-strata",
        title: "Configurations of the cap study",
        analysis: "sweep_strata",
        tables: &["sweep_strata", "crossover_strata"],
        build: cap_strata::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "cap-studies",
        title: "The cap study's menu contrast",
        analysis: "cap_sweep",
        tables: &["cap_sweep", "cap_crossover"],
        build: cap_studies::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "discovery",
        title: "Discovery: availability and the R contrast",
        analysis: "discovery",
        tables: &["discovery"],
        build: discovery::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "repairs",
        title: "Repairs against their own layer",
        analysis: "repairs",
        tables: &["repairs"],
        build: repairs::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "sentinel",
        title: "Sentinel repeats",
        analysis: "sentinel",
        tables: &["sentinel"],
        build: repairs::sentinel,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "repeats",
        title: "Repeats: pass@1, pass^k and disagreement",
        analysis: "repeats",
        tables: &["repeats"],
        build: repeats::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "switches",
        title: "Repair versus switching the configuration",
        analysis: "switches",
        tables: &["switch_summary", "switches", "switch_incumbents"],
        build: switches::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "the-depth-frontier",
        title: "The depth frontier",
        analysis: "frontier",
        tables: &["frontier", "frontier_paths"],
        build: frontier::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "structural-holdout",
        title: "Structural holdout",
        analysis: "holdout",
        tables: &["holdout", "holdout_arms"],
        build: holdout::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "the-policy-pilot",
        title: "The policy pilot",
        analysis: "pilot",
        tables: &["pilot", "trace_selector"],
        build: pilot::section,
        noted_when_absent: false,
    },
    SectionSpec {
        id: "toolsandbox",
        title: "ToolSandbox: distraction tools",
        analysis: "toolsandbox",
        tables: &[
            "toolsandbox_contrasts",
            "toolsandbox_levels",
            "toolsandbox_categories",
        ],
        build: toolsandbox::section,
        noted_when_absent: false,
    },
];

/// The rows of `R`'s table, if the study has that table (a present table of another
/// layout is an error naming the table and what does not fit).
pub(crate) fn rows<R: TableRow>(tables: &Tables) -> Result<Option<Vec<R>>, ReportError> {
    Ok(tables.get(R::TABLE).map(R::from_batch).transpose()?)
}

/// The note for a part of a section whose table is absent.
pub(crate) fn absent(what: &str, table: &str, analysis: &str) -> Vec<Inline> {
    vec![
        text(format!("{what}: omitted, there is no ")),
        code(table),
        text(" table (the "),
        code(analysis),
        text(" analysis writes it)."),
    ]
}

/// A menu lane and completion cap: the analyses compute everything per stratum.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Stratum {
    /// Sorts the routed lane (the paper's primary lane) first.
    not_routed: bool,
    /// Lane name.
    pub lane: String,
    /// Completion cap per request.
    pub cap: u64,
}

impl Stratum {
    /// The stratum of `lane` and `cap`.
    pub(crate) fn new(lane: &str, cap: u64) -> Stratum {
        Stratum {
            not_routed: lane != "routed",
            lane: lane.to_string(),
            cap,
        }
    }

    /// A heading: "Routed lane, completion cap 1,024".
    pub(crate) fn title(&self) -> String {
        let mut lane = self.lane.clone();
        if let Some(first) = lane.get(..1) {
            lane = format!("{}{}", first.to_uppercase(), &lane[1..]);
        }
        format!("{lane} lane, completion cap {}", format::count(self.cap))
    }

    /// For captions: "routed lane, cap 1,024".
    pub(crate) fn short(&self) -> String {
        format!("{} lane, cap {}", self.lane, format::count(self.cap))
    }

    /// For file names: "routed-1024" (characters other than ASCII letters and digits
    /// become `-`, so any lane name makes a safe file name).
    pub(crate) fn slug(&self) -> String {
        let lane: String = self
            .lane
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        format!("{lane}-{}", self.cap)
    }
}

/// The distinct values of `values` in order of first appearance.
pub(crate) fn first_seen<T: Clone + PartialEq>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

/// "a", "a and b", "a, b and c".
pub(crate) fn and_list(items: &[String]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The plural used in headings for a cluster unit (`family` → `families`).
pub(crate) fn unit_plural(unit: &str) -> String {
    match unit {
        "family" => "families".into(),
        "intent" => "intents".into(),
        "configuration" => "configurations".into(),
        "domain" => "domains".into(),
        "organization" => "organizations".into(),
        "required_tools" => "required-tool clusters".into(),
        other => format!("{other} clusters"),
    }
}

/// The label of a pooled row: the analyses write `all` for the whole panel.
pub(crate) fn configuration_label(configuration: &str) -> String {
    if configuration == "all" {
        "all (pooled)".into()
    } else {
        configuration.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routed_lane_comes_first_then_lanes_by_name_and_caps_ascending() {
        let mut s = [
            Stratum::new("fixed", 1024),
            Stratum::new("routed", 4096),
            Stratum::new("routed", 1024),
            Stratum::new("alpha", 1024),
        ];
        s.sort();
        let names: Vec<String> = s.iter().map(Stratum::slug).collect();
        assert_eq!(
            names,
            ["routed-1024", "routed-4096", "alpha-1024", "fixed-1024"]
        );
        assert_eq!(
            Stratum::new("routed", 1024).title(),
            "Routed lane, completion cap 1,024"
        );
        assert_eq!(Stratum::new("a b/é", 8).slug(), "a-b---8");
    }
}

/// What the section tests share: an analysis kind run on hand-built episodes, its
/// tables rendered as a report, and the markdown of one section.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeMap;

    use tbb_analysis::{Context, Kind};
    use tbb_tables::rows::EpisodeRow;

    /// The report of `kind` run with `params` (JSON) on `episodes`.
    pub(crate) fn rendered(
        kind: &dyn Kind,
        study: &str,
        episodes: &[EpisodeRow],
        params: &str,
    ) -> crate::Rendered {
        let params = serde_json::from_str(params).unwrap_or_else(|e| panic!("{e}"));
        let context = Context {
            study,
            episodes,
            requests: &tbb_analysis::NO_REQUESTS,
            tables: &BTreeMap::new(),
            skipped: &[],
        };
        let produced = kind
            .run(&params, &context)
            .unwrap_or_else(|e| panic!("{e}"));
        let tables: BTreeMap<String, _> = produced
            .tables
            .into_iter()
            .map(|o| (o.table.to_string(), o.batch))
            .collect();
        crate::render(study, &tables, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The markdown from `heading` to the closing comment.
    pub(crate) fn section<'r>(r: &'r crate::Rendered, heading: &str) -> &'r str {
        let from = r.markdown.find(heading).unwrap_or(0);
        let to = r.markdown.rfind("<!--").unwrap_or(r.markdown.len());
        &r.markdown[from..to]
    }
}
