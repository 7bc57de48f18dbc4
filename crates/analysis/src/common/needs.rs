//! The design an analysis is checked against before any episode runs: a small view of
//! the manifest ([`Design`], built in one place, by the engine's manifest) and the needs the
//! capacity analyses share (every capacity cell, matched V pairs, both menu lanes).
//!
//! A kind declares its needs in its own file ([`crate::Typed::needs`]) by calling
//! these checks; an analysis whose needs are unmet is listed by `tbb manifest check`
//! and `tbb plan` with why, gets no DAG node, and is noted as skipped in the report.
//!
//! Never: reads episodes, files or anything but the manifest it is given.

use std::collections::BTreeSet;

use super::design;
use crate::ParamProblem;
use tbb_diag::names::closest;
use tbb_tables::levels::Cell;
use tbb_tables::levels::{Actor, Delivery, Menu, PromptVariant};

/// One block of the design, as the analyses count units in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockShape {
    /// Its cells.
    pub cells: Vec<Cell>,
    /// How many families it runs.
    pub families: usize,
    /// Repeats of every condition.
    pub repeats: u32,
    /// The names of the arms it runs.
    pub arms: Vec<String>,
}

/// What the analyses' needs are checked against: the conditions a manifest runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    /// Cells, as the manifest gives them.
    pub cells: Vec<Cell>,
    /// Menu components of the arms (routed, fixed).
    pub menus: Vec<Menu>,
    /// Prompt components of the arms (base, workflow, interface guide).
    pub prompts: Vec<PromptVariant>,
    /// Delivery components of the arms.
    pub deliveries: Vec<Delivery>,
    /// Actor components of the arms.
    pub actors: Vec<Actor>,
    /// Configuration names.
    pub configurations: Vec<String>,
    /// Names of the arms some block runs, in the order declared.
    pub arms: Vec<String>,
    /// Each block's shape: which conditions an analysis's comparison draws on.
    pub blocks: Vec<BlockShape>,
    /// Every completion cap some block runs at, ascending.
    pub completion_caps: Vec<u32>,
    /// Whether the study plays ToolSandbox scenarios (`[toolsandbox]`).
    pub plays_toolsandbox: bool,
}

impl Design {
    /// Indices into [`design::CELLS`] of the capacity cells the design runs.
    fn capacity_cells(&self) -> BTreeSet<usize> {
        let index = |c: &Cell| {
            let capacity = c.r == design::CAPACITY_R && c.depth.is_none();
            design::CELLS
                .iter()
                .position(|x| capacity && u32::from(c.v) == x.v && x.w == c.w && x.d == c.d)
        };
        self.cells.iter().filter_map(index).collect()
    }

    /// All twelve capacity cells (every contrast's weights span them).
    pub fn needs_every_capacity_cell(&self) -> Option<String> {
        let present = self.capacity_cells();
        let missing: Vec<String> = (0..design::CELLS.len())
            .filter(|i| !present.contains(i))
            .map(|i| design::CELLS[i].label())
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "it needs all 12 capacity cells; the manifest lacks {}",
                missing.join(", ")
            )
        })
    }

    /// Matched V = 8 / V = 128 pairs: at least one endpoint (W, D) at both menu sizes,
    /// and every endpoint cell's V partner.
    pub fn needs_v_pairs(&self) -> Option<String> {
        let present = self.capacity_cells();
        let endpoints: Vec<usize> = present
            .iter()
            .copied()
            .filter(|&i| i < design::N_ENDPOINTS)
            .collect();
        // Endpoints are ordered V slowest: the partner of cell i is i ± 4.
        let half = design::N_ENDPOINTS / 2;
        let partner = |i: usize| if i < half { i + half } else { i - half };
        let unpaired: Vec<String> = endpoints
            .iter()
            .filter(|&&i| !present.contains(&partner(i)))
            .map(|&i| {
                format!(
                    "{} has no {}",
                    design::CELLS[i].label(),
                    design::CELLS[partner(i)].label()
                )
            })
            .collect();
        if endpoints.is_empty() {
            Some("it needs matched V = 8 / V = 128 cells (e.g. (8, low, raw) and (128, low, raw)); the manifest has none".into())
        } else if !unpaired.is_empty() {
            Some(format!(
                "it needs every endpoint cell's V = 8 / V = 128 partner: {}",
                unpaired.join(", ")
            ))
        } else {
            None
        }
    }

    /// Both menus, routed and fixed (the lanes).
    pub fn needs_both_lanes(&self) -> Option<String> {
        let both = self.menus.contains(&Menu::Routed) && self.menus.contains(&Menu::Fixed);
        (!both).then(|| "it needs an arm with the routed menu and one with the fixed menu (`[[arms]]` with `menu = \"routed\"` and `menu = \"fixed\"`)".into())
    }
}

/// What an analysis's parameters may name, checked when the manifest loads
/// ([`crate::Typed::check_names`]): the design, and every configuration of the
/// catalogue (a configuration the catalogue has but the study does not run is a need
/// the design does not meet, and the analysis is skipped; one the catalogue lacks is a
/// mistake).
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    /// The study's design.
    pub design: &'a Design,
    /// Every configuration name of the catalogue.
    pub catalogue: &'a [String],
}

impl Names<'_> {
    /// A problem when `name`, given at `path`, is not an arm the study runs.
    pub fn arm(&self, path: &str, name: &str) -> Option<ParamProblem> {
        let arms = self.design.arms.iter().map(String::as_str);
        among(path, "arm", name, arms, "the `[[arms]]` a block runs")
    }

    /// A problem when `name`, given at `path`, is no configuration of the catalogue.
    pub fn configuration(&self, path: &str, name: &str) -> Option<ParamProblem> {
        let names = self.catalogue.iter().map(String::as_str);
        among(
            path,
            "configuration",
            name,
            names,
            "the catalogue's configurations",
        )
    }

    /// A problem when `cap`, given at `path`, is no completion cap of the study.
    pub fn completion_cap(&self, path: &str, cap: u32) -> Option<ParamProblem> {
        let caps = &self.design.completion_caps;
        (!caps.contains(&cap)).then(|| ParamProblem {
            path: path.to_string(),
            message: format!("the study runs no episode at completion cap {cap}"),
            help: Some(format!("its caps are {}", list(caps))),
        })
    }

    /// The study's one completion cap, or a problem at `path` asking for one of its
    /// caps when it runs several (an analysis that reads one cap takes it from the
    /// study when the study pins it).
    pub fn single_cap(&self, path: &str) -> Result<u32, ParamProblem> {
        match self.design.completion_caps.as_slice() {
            [cap] => Ok(*cap),
            caps => Err(ParamProblem {
                path: path.to_string(),
                message: format!(
                    "the study runs {} completion caps, so the analysis must be told which one it reads",
                    caps.len()
                ),
                help: Some(format!("set `{path}` to one of {}", list(caps))),
            }),
        }
    }
}

fn list(caps: &[u32]) -> String {
    caps.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A problem when `name`, given at `path`, is not among `options`, with "did you
/// mean" (`which` says what the options are, for the list when none is near).
pub fn among<'o>(
    path: &str,
    what: &str,
    name: &str,
    options: impl Iterator<Item = &'o str> + Clone,
    which: &str,
) -> Option<ParamProblem> {
    if options.clone().any(|o| o == name) {
        return None;
    }
    let listed: Vec<&str> = options.clone().collect();
    let help = match closest(name, options) {
        Some(near) => format!("did you mean `{near}`?"),
        None if listed.is_empty() => format!("the study has none of {which}"),
        None => format!("{which}: {}", listed.join(", ")),
    };
    Some(ParamProblem {
        path: path.to_string(),
        message: format!("unknown {what} `{}`", name.escape_debug()),
        help: Some(help),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnalysisKind;

    fn cell(v: u16, w: &str, d: &str) -> Cell {
        Cell {
            v,
            w: w.parse().unwrap_or_else(|_| panic!("{w}")),
            d: d.parse().unwrap_or_else(|_| panic!("{d}")),
            r: tbb_tables::levels::Routing::Low,
            depth: None,
        }
    }

    fn design(cells: &[Cell], menus: &[Menu]) -> Design {
        Design {
            cells: cells.to_vec(),
            menus: menus.to_vec(),
            prompts: vec![PromptVariant::Base],
            deliveries: vec![Delivery::Native],
            actors: vec![Actor::Model],
            configurations: vec!["sim-x".into()],
            arms: vec!["baseline".into()],
            blocks: vec![],
            completion_caps: vec![1024],
            plays_toolsandbox: false,
        }
    }

    #[test]
    fn the_toolsandbox_analysis_needs_a_study_that_plays_toolsandbox() {
        let mut d = design(&[], &[Menu::Routed]);
        let why = needs("toolsandbox", &d).unwrap_or_default();
        assert!(why.contains("`[toolsandbox]`"), "{why}");
        d.plays_toolsandbox = true;
        assert_eq!(needs("toolsandbox", &d), None);
    }

    fn needs(kind: &str, d: &Design) -> Option<String> {
        AnalysisKind::get(kind)
            .unwrap_or_else(|| panic!("{kind} is registered"))
            .kind()
            .needs(&serde_json::Map::new(), d)
    }

    #[test]
    fn a_design_with_every_factor_runs_every_analysis() {
        let mut d = design(&Cell::capacity(), &[Menu::Routed, Menu::Fixed]);
        // Two caps, as the completion-cap studies compare.
        d.completion_caps = vec![1024, 4096];
        // And one cell at R high beside its R-low sibling, as the discovery study runs.
        let mut high = d.cells[0];
        high.r = tbb_tables::levels::Routing::High;
        d.cells.push(high);
        // And the structural holdout's: frontier depths, and the controller.
        d.cells.extend([Cell::frontier(2), Cell::frontier(30)]);
        d.actors.push(Actor::Controller);
        // And ToolSandbox's scenarios.
        d.plays_toolsandbox = true;
        for kind in AnalysisKind::all() {
            assert_eq!(
                kind.kind().needs(&serde_json::Map::new(), &d),
                None,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_small_live_study_declares_what_it_cannot_run() {
        // V = 8 and V = 128 at one W/D, one lane.
        let d = design(
            &[cell(8, "low", "raw"), cell(128, "low", "raw")],
            &[Menu::Routed],
        );
        let contrasts = needs("contrasts", &d).unwrap_or_default();
        assert!(contrasts.contains("(8, high, linked)"), "{contrasts}");
        assert!(!contrasts.contains("(8, low, raw)"), "{contrasts}");
        assert_eq!(needs("truncation", &d), None);
        assert_eq!(needs("strata", &d), None);
        assert!(needs("lanes", &d).is_some());
        assert_eq!(needs("costs", &d), None);
        let lonely = design(
            &[cell(8, "low", "raw"), cell(128, "high", "raw")],
            &[Menu::Routed],
        );
        let strata = needs("strata", &lonely).unwrap_or_default();
        assert!(
            strata.contains("(8, low, raw) has no (128, low, raw)"),
            "{strata}"
        );
        let none = needs(
            "truncation",
            &design(&[cell(32, "low", "raw")], &[Menu::Routed]),
        );
        assert!(none.is_some_and(|s| s.contains("has none")));
    }
}
