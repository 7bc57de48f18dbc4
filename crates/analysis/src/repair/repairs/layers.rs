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
use tbb_tables::levels::{Actor, Delivery, Menu, PromptVariant};
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

/// An arm component at one of its values, read from its episodes column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// `lane` (the menu).
    Lane(Menu),
    /// `repair` (the prompt).
    Repair(PromptVariant),
    /// `delivery`.
    Delivery(Delivery),
    /// `actor`.
    Actor(Actor),
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
    /// The component the repair changes, at the repair's value (the no-repair arm's
    /// are [`NO_REPAIR`]).
    pub component: Component,
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
        component: Component::Lane(Menu::Routed),
        repair: "routed_menu",
        needs_delta: false,
    },
    Layer {
        name: "W",
        axis: Axis::W,
        unstressed: "low",
        stressed: "high",
        component: Component::Repair(PromptVariant::Workflow),
        repair: "workflow_prompt",
        needs_delta: false,
    },
    Layer {
        name: "D",
        axis: Axis::D,
        unstressed: "raw",
        stressed: "linked",
        component: Component::Repair(PromptVariant::InterfaceGuide),
        repair: "interface_guide",
        needs_delta: false,
    },
    Layer {
        name: "R",
        axis: Axis::R,
        unstressed: "low",
        stressed: "high",
        component: Component::Lane(Menu::Router),
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
        component: Component::Actor(Actor::Controller),
        repair: "controller",
        needs_delta: true,
    },
    Layer {
        name: "D",
        axis: Axis::D,
        unstressed: "raw",
        stressed: "compact",
        component: Component::Delivery(Delivery::Canonical),
        repair: "canonical_delivery",
        needs_delta: false,
    },
];

/// The no-repair arm's menu.
pub const NO_REPAIR_LANE: Menu = Menu::Fixed;
/// The no-repair arm's prompt (as a repair, `none`).
pub const NO_REPAIR_PROMPT: PromptVariant = PromptVariant::Base;
/// The no-repair arm's components.
pub const NO_REPAIR: [Component; 4] = [
    Component::Lane(NO_REPAIR_LANE),
    Component::Repair(NO_REPAIR_PROMPT),
    Component::Delivery(Delivery::Native),
    Component::Actor(Actor::Model),
];

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
        match self.component {
            Component::Lane(menu) => format!("menu = {menu}"),
            Component::Repair(prompt) => format!("repair = {}", prompt.repair_name()),
            Component::Delivery(delivery) => format!("delivery = {delivery}"),
            Component::Actor(actor) => format!("actor = {actor}"),
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
    let components = [
        Component::Lane(row.lane),
        Component::Repair(row.repair),
        Component::Delivery(row.delivery),
        Component::Actor(row.actor),
    ];
    let mut differs = components
        .iter()
        .zip(&NO_REPAIR)
        .filter(|(component, off)| component != off);
    match (differs.next(), differs.next()) {
        (None, _) => Some(None),
        (Some((component, _)), None) => layers
            .iter()
            .position(|l| l.component == *component)
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
        let with = |lane: Menu, repair: PromptVariant| {
            let mut r = row("a", "O", "f", "i", 128, "high", "linked", true);
            (r.lane, r.repair) = (lane, repair);
            r
        };
        let (fixed, none) = (Menu::Fixed, PromptVariant::Base);
        assert_eq!(arm_of(&with(fixed, none)), Some(None));
        assert_eq!(arm_of(&with(Menu::Routed, none)), Some(Some(0)));
        assert_eq!(arm_of(&with(fixed, PromptVariant::Workflow)), Some(Some(1)));
        assert_eq!(
            arm_of(&with(fixed, PromptVariant::InterfaceGuide)),
            Some(Some(2))
        );
        assert_eq!(arm_of(&with(Menu::Router, none)), Some(Some(3)));
        // Two repairs at once, or another delivery, is no arm of the design.
        assert_eq!(arm_of(&with(Menu::Routed, PromptVariant::Workflow)), None);
        let mut canonical = with(fixed, none);
        canonical.delivery = Delivery::Canonical;
        assert_eq!(arm_of(&canonical), None);
        let components: Vec<String> = LAYERS.iter().map(Layer::component).collect();
        assert_eq!(
            components,
            [
                "menu = routed",
                "repair = workflow_prompt",
                "repair = interface_guide",
                "menu = router"
            ]
        );
        // (128, high, linked, low): stressed on V, W and D, unstressed on R.
        let r = with(fixed, none);
        let levels = LAYERS.map(|l| l.level(&r));
        assert_eq!(levels, [Some(1), Some(1), Some(1), Some(0)]);
        assert_eq!(LAYERS[0].stratum(&r), "w=high d=linked r=low");
        let small = row("a", "O", "f", "i", 32, "medium", "typed", true);
        assert_eq!(LAYERS.map(|l| l.level(&small)), [None, None, None, Some(0)]);
    }
}
