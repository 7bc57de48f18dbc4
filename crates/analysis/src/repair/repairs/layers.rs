//! The repairs design as the `repairs`, `sentinel` and `holdout` analyses read it from
//! episode rows: the layers (the axis each stresses, its unstressed and stressed
//! levels, the arm component its repair changes) — the four of the repairs study
//! ([`LAYERS`]) and the two of the structural holdout ([`HOLDOUT_LAYERS`]) — which arm
//! a row belongs to ([`arm_of`], [`arm_in`]), the design needs the repairs kinds
//! share, and their parameters.
//!
//! Arms are recognised by their component columns (`lane`, `repair`, `delivery`,
//! `actor`), never by their manifest names: the no-repair arm is the fixed menu with
//! the base prompt, native delivery and the model acting, and a layer's repair is that
//! arm with the layer's one component changed. Adding the router's layer to a study
//! needs no change here: R is listed, and becomes estimable once a study runs an arm
//! with `menu = router`.
//!
//! Never: computes a statistic or reads anything but the rows and the design given.

use serde::{Deserialize, Serialize};

use crate::common::stats::{DEFAULT_DRAWS, DEFAULT_SEED};
use crate::Design;
use tbb_tables::levels::{Menu, PromptVariant};
use tbb_tables::rows::EpisodeRow;

/// The parameters of `repairs` and `sentinel`: family-cluster bootstrap draws and seed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bootstrap draws (default 10,000).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default 20261202).
    #[serde(default)]
    pub seed: Option<u64>,
}

impl Params {
    /// `(draws, seed)` with the defaults filled in.
    pub fn resolved(&self) -> (u32, u64) {
        (
            self.draws.unwrap_or(DEFAULT_DRAWS),
            self.seed.unwrap_or(DEFAULT_SEED),
        )
    }
}

/// The episodes column a component is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// `lane` (the menu).
    Lane,
    /// `repair` (the prompt).
    Repair,
    /// `delivery`.
    Delivery,
    /// `actor`.
    Actor,
}

/// The cell axis a layer stresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Visible menu size.
    V,
    /// Workflow.
    W,
    /// Encoding.
    D,
    /// Routing.
    R,
    /// Frontier depth (required calls along the hand-off chain).
    Depth,
}

/// A layer: its pressure and its repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    /// `V`, `W`, `D`, `R`.
    pub name: &'static str,
    /// The axis.
    pub axis: Axis,
    /// The unstressed level (z = 0).
    pub unstressed: &'static str,
    /// The stressed level (z = 1).
    pub stressed: &'static str,
    /// The column of the component the repair changes.
    pub column: Column,
    /// The repair's value there (the no-repair arm's is `fixed` or `none`).
    pub value: &'static str,
    /// The repair's name in tables.
    pub repair: &'static str,
    /// Whether "activates" also needs Δ > 0 (the controller's test: its Δ is its Σ
    /// minus its wrong-layer control's).
    pub needs_delta: bool,
}

/// The four layers, in table order.
pub const LAYERS: [Layer; 4] = [
    Layer {
        name: "V",
        axis: Axis::V,
        unstressed: "8",
        stressed: "128",
        column: Column::Lane,
        value: "routed",
        repair: "routed_menu",
        needs_delta: false,
    },
    Layer {
        name: "W",
        axis: Axis::W,
        unstressed: "low",
        stressed: "high",
        column: Column::Repair,
        value: "workflow_prompt",
        repair: "workflow_prompt",
        needs_delta: false,
    },
    Layer {
        name: "D",
        axis: Axis::D,
        unstressed: "raw",
        stressed: "linked",
        column: Column::Repair,
        value: "interface_guide",
        repair: "interface_guide",
        needs_delta: false,
    },
    Layer {
        name: "R",
        axis: Axis::R,
        unstressed: "low",
        stressed: "high",
        column: Column::Lane,
        value: "router",
        repair: "router",
        needs_delta: false,
    },
];

/// The structural holdout's layers: the hand-off depth (2 → 30 required calls), whose
/// repair is the public-handoff controller, and the encoding (raw → compact), whose
/// repair is canonical delivery — each the other's wrong-layer control on the same
/// cells.
pub const HOLDOUT_LAYERS: [Layer; 2] = [
    Layer {
        name: "depth",
        axis: Axis::Depth,
        unstressed: "2",
        stressed: "30",
        column: Column::Actor,
        value: "controller",
        repair: "controller",
        needs_delta: true,
    },
    Layer {
        name: "D",
        axis: Axis::D,
        unstressed: "raw",
        stressed: "compact",
        column: Column::Delivery,
        value: "canonical",
        repair: "canonical_delivery",
        needs_delta: false,
    },
];

/// The no-repair arm's menu.
pub const NO_REPAIR_LANE: &str = "fixed";
/// The no-repair arm's prompt (as a repair).
pub const NO_REPAIR_PROMPT: &str = "none";
/// The no-repair arm's delivery.
pub const NO_REPAIR_DELIVERY: &str = "native";
/// The no-repair arm's actor.
pub const NO_REPAIR_ACTOR: &str = "model";

impl Layer {
    /// Its pressure for a row: 0, 1, or `None` at another level.
    pub fn level(&self, row: &EpisodeRow) -> Option<usize> {
        let is = |level: &str| match self.axis {
            Axis::V => level.parse() == Ok(row.v),
            Axis::W => row.w.name() == level,
            Axis::D => row.d.name() == level,
            Axis::R => row.r.name() == level,
            Axis::Depth => row.depth.map(|d| d.to_string()).as_deref() == Some(level),
        };
        if is(self.unstressed) {
            Some(0)
        } else if is(self.stressed) {
            Some(1)
        } else {
            None
        }
    }

    /// The row's cell without this layer's axis.
    pub fn stratum(&self, row: &EpisodeRow) -> String {
        let mut parts = Vec::new();
        if self.axis != Axis::V {
            parts.push(format!("v={}", row.v));
        }
        if self.axis != Axis::W {
            parts.push(format!("w={}", row.w));
        }
        if self.axis != Axis::D {
            parts.push(format!("d={}", row.d));
        }
        if self.axis != Axis::R {
            parts.push(format!("r={}", row.r));
        }
        if let (Some(depth), false) = (row.depth, self.axis == Axis::Depth) {
            parts.push(format!("depth={depth}"));
        }
        parts.join(" ")
    }

    /// "v 8→128".
    pub fn pressure(&self) -> String {
        let axis = match self.axis {
            Axis::V => "v",
            Axis::W => "w",
            Axis::D => "d",
            Axis::R => "r",
            Axis::Depth => "depth",
        };
        format!("{axis} {}→{}", self.unstressed, self.stressed)
    }

    /// The component that marks its repair, as a manifest would write it.
    pub fn component(&self) -> String {
        match self.column {
            Column::Lane => format!("menu = {}", self.value),
            Column::Repair => format!("repair = {}", self.value),
            Column::Delivery => format!("delivery = {}", self.value),
            Column::Actor => format!("actor = {}", self.value),
        }
    }
}

/// Which arm of the repairs design a row belongs to: `Some(None)` the no-repair arm,
/// `Some(Some(i))` the repair of `LAYERS[i]`, `None` any other arm.
pub fn arm_of(row: &EpisodeRow) -> Option<Option<usize>> {
    arm_in(row, &LAYERS)
}

/// Which arm of a design with `layers` a row belongs to: the no-repair arm when no
/// component differs from it, the repair of the one layer whose component is the only
/// one that differs and has the layer's value, `None` otherwise.
pub fn arm_in(row: &EpisodeRow, layers: &[Layer]) -> Option<Option<usize>> {
    let changed = [
        (Column::Lane, row.lane.as_str(), NO_REPAIR_LANE),
        (Column::Repair, row.repair.as_str(), NO_REPAIR_PROMPT),
        (Column::Delivery, row.delivery.as_str(), NO_REPAIR_DELIVERY),
        (Column::Actor, row.actor.as_str(), NO_REPAIR_ACTOR),
    ];
    let mut differs = changed.iter().filter(|(_, value, off)| value != off);
    match (differs.next(), differs.next()) {
        (None, _) => Some(None),
        (Some((column, value, _)), None) => layers
            .iter()
            .position(|l| l.column == *column && l.value == *value)
            .map(Some),
        _ => None,
    }
}

/// The design needs of `repairs` and `sentinel`: the no-repair arm (the fixed menu
/// with the base prompt) and at least one repair (the routed menu, the router, the
/// workflow prompt or the interface guide). Which layers are estimable is decided on
/// the rows.
pub fn needs_a_repair_design(design: &Design) -> Option<String> {
    let fixed = design.menus.contains(&Menu::Fixed);
    let repair = design.menus.contains(&Menu::Routed)
        || design.menus.contains(&Menu::Router)
        || design
            .prompts
            .iter()
            .any(|p| matches!(p, PromptVariant::Workflow | PromptVariant::InterfaceGuide));
    match (fixed, repair) {
        (true, true) => None,
        (false, _) => Some(
            "it needs the no-repair arm (`menu = \"fixed\"`, the base prompt); the manifest has \
             no fixed-menu arm"
                .into(),
        ),
        (true, false) => Some(
            "it needs at least one repair arm (`menu = \"routed\"`, `menu = \"router\"`, \
             `prompt = \"workflow\"` or `prompt = \"interface_guide\"`)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::row;

    #[test]
    fn arms_are_read_from_their_components_and_levels_from_the_cell() {
        let with = |lane: &str, repair: &str| {
            let mut r = row("a", "O", "f", "i", 128, "high", "linked", true);
            (r.lane, r.repair) = (lane.into(), repair.into());
            r
        };
        assert_eq!(arm_of(&with("fixed", "none")), Some(None));
        assert_eq!(arm_of(&with("routed", "none")), Some(Some(0)));
        assert_eq!(arm_of(&with("fixed", "workflow_prompt")), Some(Some(1)));
        assert_eq!(arm_of(&with("fixed", "interface_guide")), Some(Some(2)));
        assert_eq!(arm_of(&with("router", "none")), Some(Some(3)));
        // Two repairs at once, or another delivery, is no arm of the design.
        assert_eq!(arm_of(&with("routed", "workflow_prompt")), None);
        let mut canonical = with("fixed", "none");
        canonical.delivery = "canonical".into();
        assert_eq!(arm_of(&canonical), None);
        // (128, high, linked, low): stressed on V, W and D, unstressed on R.
        let r = with("fixed", "none");
        let levels = LAYERS.map(|l| l.level(&r));
        assert_eq!(levels, [Some(1), Some(1), Some(1), Some(0)]);
        assert_eq!(LAYERS[0].stratum(&r), "w=high d=linked r=low");
        let small = row("a", "O", "f", "i", 32, "medium", "typed", true);
        assert_eq!(LAYERS.map(|l| l.level(&small)), [None, None, None, Some(0)]);
    }
}
