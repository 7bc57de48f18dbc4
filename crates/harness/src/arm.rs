//! Arms: what an episode does differently from the no-repair baseline, as a composition
//! of independent components, and the hooks each component plugs into the episode loop
//! ([`super::episode`]).
//!
//! | component | variants | hook | what the hook decides |
//! |---|---|---|---|
//! | [`PromptVariant`] | base, workflow, interface_guide | [`Arm::system_prompt`] | the system message |
//! | [`Menu`] | fixed, routed, router, retrieval{k} | [`MenuState`] | which schemas are visible before each request |
//! | [`Delivery`] | native, canonical | [`Delivery::encoding`] | the encoding an executed call's records reach the agent in |
//! | [`Actor`] | model, controller | [`Actor::delegates`] | who issues the next call |
//!
//! plus the completion cap, which the execute node carries beside the arm.
//!
//! Adding a variant is one enum variant plus its arm in the hook's `match`: the DAG,
//! the keys (which take [`ArmForm`] as a whole), the tables (one column per component,
//! named by [`ArmForm::columns`]) and the reports do not change.
//!
//! Invariants: an arm's identity in results is its name; its identity in keys is its
//! canonical form ([`ArmForm`]), so renaming an arm reruns nothing. Two arms of one block
//! with the same form and cap would be the same episode twice: the manifest refuses them.
//!
//! Never: reads the answer or the reference program, except where a component is an
//! oracle by definition and says so (the routed menu narrows to the operational tools,
//! as the paper's oracle-assisted reference does). The router and the retrieval menu
//! are blind: they are handed the user request's text and the full menu as wire
//! schemas, and decide in the agent crate ([`tbb_agent::discovery`]), which cannot
//! name a variant; so is the public-handoff controller ([`tbb_agent::controller`]),
//! handed the visible schemas and the executed calls' observations as delivered.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

pub use super::prompts::PromptVariant;
use tbb_agent::discovery;
use tbb_core::compile::{Encoding, Variant};
use tbb_provider::ToolSchema;

/// The menu component: which tool schemas the agent sees before each request.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Menu {
    /// Full menu until the first executed call to an operational tool, then the
    /// operational tools only (oracle-assisted: the narrowing uses the ground truth).
    #[default]
    Routed,
    /// Full menu throughout (the routed menu's no-repair arm).
    Fixed,
    /// The connector-first router: before the first request, only the tools of the
    /// connector whose three coordinates match the route the user request names; the
    /// full menu when that route is absent or ambiguous. Blind (public text only).
    Router,
    /// The `k` tools of the full menu that BM25 ranks highest against the user
    /// request, throughout. The required tools may be missing: availability fails and
    /// no request is sent. Blind (public text only).
    Retrieval {
        /// How many schemas are kept.
        k: u16,
    },
}

impl Menu {
    /// Every kind of menu with its manifest name (`retrieval` with `k = 0` stands for
    /// every `k`; the manifest's `k` sets it).
    pub const NAMES: [(&'static str, Menu); 4] = [
        ("routed", Menu::Routed),
        ("fixed", Menu::Fixed),
        ("router", Menu::Router),
        ("retrieval", Menu::Retrieval { k: 0 }),
    ];

    /// The largest `k` of a retrieval menu (the largest menu size).
    pub const MAX_K: u16 = 128;

    /// Its name in rows (`lane` column) and reports: the manifest name, and for a
    /// retrieval menu `retrieval_k<k>`.
    pub fn name(self) -> String {
        match self {
            Menu::Retrieval { k } => format!("retrieval_k{k}"),
            other => name_of(&Menu::NAMES, other),
        }
    }

    /// Every menu's row name ([`Menu::name`]): the kinds of [`Menu::NAMES`] in order, the
    /// retrieval menu once for each `k` from 1 to [`Menu::MAX_K`]. The closed set of
    /// names the `lane` column takes, each of which [`Menu::from_str`] reads back.
    pub fn row_names() -> &'static [&'static str] {
        static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
            Menu::NAMES
                .iter()
                .flat_map(|(_, kind)| match kind {
                    Menu::Retrieval { .. } => {
                        (1..=Menu::MAX_K).map(|k| Menu::Retrieval { k }).collect()
                    }
                    other => vec![*other],
                })
                // Built once per process: the names live as long as it does.
                .map(|m| &*Box::leak(m.name().into_boxed_str()))
                .collect()
        });
        &NAMES
    }

    /// The hook's state for one episode.
    pub fn start(self, variant: &Variant) -> MenuState {
        let full = schemas(variant, |_| true);
        let keep = |positions: Vec<usize>| -> Vec<ToolSchema> {
            positions
                .into_iter()
                .filter_map(|i| full.get(i).cloned())
                .collect()
        };
        match self {
            Menu::Fixed => MenuState {
                visible: full,
                narrow_to: None,
            },
            Menu::Routed => MenuState {
                narrow_to: Some((
                    variant.operational_tools.clone(),
                    schemas(variant, |t| t.operational),
                )),
                visible: full,
            },
            Menu::Router => {
                let decision = discovery::router::route(&variant.user_request, &full);
                MenuState {
                    visible: keep(decision.visible(full.len())),
                    narrow_to: None,
                }
            }
            Menu::Retrieval { k } => {
                let top = discovery::retrieve::top_k(&variant.user_request, &full, k.into());
                MenuState {
                    visible: keep(top),
                    narrow_to: None,
                }
            }
        }
    }
}

/// The delivery component: the encoding records reach the agent in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Records in the cell's own encoding, as the sandbox returns them.
    #[default]
    Native,
    /// Records in one canonical encoding whatever the cell's D ([`CANONICAL`]): the
    /// encoding layer's wrong-layer control for the controller.
    Canonical,
}

/// The canonical delivery's encoding: raw, the one whose objects carry every field by
/// name with no dictionary to resolve. At a raw cell canonical delivery changes
/// nothing the agent sees.
pub const CANONICAL: Encoding = Encoding::Raw;

impl Delivery {
    /// Every variant with its manifest name.
    pub const NAMES: [(&'static str, Delivery); 2] = [
        ("native", Delivery::Native),
        ("canonical", Delivery::Canonical),
    ];

    /// The hook: the encoding the sandbox also delivers records in, `None` for the
    /// cell's own. The trace and the grader keep the sandbox's native observation;
    /// the agent's tool message carries the delivered text.
    pub fn encoding(self) -> Option<Encoding> {
        match self {
            Delivery::Native => None,
            Delivery::Canonical => Some(CANONICAL),
        }
    }
}

/// The actor component: who issues the next call.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The configuration's model, through its provider.
    #[default]
    Model,
    /// The public-handoff controller follows the returned records' hand-offs and
    /// issues those calls itself; the model is asked for the rest (the first call, the
    /// answer). Blind: [`tbb_agent::controller`].
    Controller,
}

impl Actor {
    /// Every variant with its manifest name.
    pub const NAMES: [(&'static str, Actor); 2] =
        [("model", Actor::Model), ("controller", Actor::Controller)];

    /// The hook: whether the controller is consulted before each request.
    pub fn delegates(self) -> bool {
        match self {
            Actor::Model => false,
            Actor::Controller => true,
        }
    }
}

/// An arm's canonical form: its components, without its name. This is what execute
/// keys hash.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub struct ArmForm {
    /// The system prompt.
    pub prompt: PromptVariant,
    /// The menu.
    pub menu: Menu,
    /// The delivery of observations.
    pub delivery: Delivery,
    /// Who issues calls.
    pub actor: Actor,
}

impl ArmForm {
    /// The baseline: base prompt, routed menu, native delivery, the model acting.
    pub fn baseline() -> ArmForm {
        ArmForm::default()
    }

    /// One `(column, value)` per component, as rows and identities show them. The
    /// prompt's column is `repair` and the menu's `lane`, the names the capacity
    /// tables always had.
    pub fn columns(&self) -> [(&'static str, String); 4] {
        [
            ("repair", self.prompt.repair_name().to_string()),
            ("lane", self.menu.name()),
            ("delivery", name_of(&Delivery::NAMES, self.delivery)),
            ("actor", name_of(&Actor::NAMES, self.actor)),
        ]
    }
}

/// A named arm of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Arm {
    /// Its name in the manifest and in every row (`arm` column).
    pub name: String,
    /// Its components.
    pub form: ArmForm,
    /// The completion cap it pins, if any (otherwise the block's caps apply).
    pub completion_cap: Option<u32>,
}

impl Arm {
    /// The system prompt hook: the text of the arm's prompt variant.
    pub fn system_prompt(form: &ArmForm, prompts: &super::Prompts) -> String {
        prompts.system(form.prompt).to_string()
    }
}

/// The menu hook's state over one episode.
#[derive(Debug, Clone)]
pub struct MenuState {
    visible: Vec<ToolSchema>,
    /// The routed menu's narrowing: the operational tools' names and schemas, taken
    /// once the first operational call has executed.
    narrow_to: Option<(Vec<String>, Vec<ToolSchema>)>,
}

impl MenuState {
    /// The schemas visible before the next request.
    pub fn visible(&self) -> &[ToolSchema] {
        &self.visible
    }

    /// Hands the visible schemas over, leaving none here: for a caller (the episode
    /// loop) that keeps them in its request, so that a menu is not held twice. Later
    /// changes still come from [`MenuState::after_call`].
    pub fn take_visible(&mut self) -> Vec<ToolSchema> {
        std::mem::take(&mut self.visible)
    }

    /// Called after each executed call; returns the new visible schemas when the menu
    /// changes.
    pub fn after_call(&mut self, tool: &str) -> Option<&[ToolSchema]> {
        let narrows = self
            .narrow_to
            .as_ref()
            .is_some_and(|(names, _)| names.iter().any(|n| n == tool));
        if !narrows {
            return None;
        }
        let (_, schemas) = self.narrow_to.take()?;
        self.visible = schemas;
        Some(&self.visible)
    }
}

fn schemas(variant: &Variant, keep: impl Fn(&tbb_core::compile::Tool) -> bool) -> Vec<ToolSchema> {
    variant
        .menu
        .iter()
        .filter(|t| keep(t))
        .map(|t| ToolSchema {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
        })
        .collect()
}

/// A name that is not one of a component's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a {component} (expected one of {expected})")]
pub struct UnknownComponent {
    /// Which component (`menu`, `prompt`, ...).
    pub component: &'static str,
    /// The name given.
    pub value: String,
    /// The names it takes, comma-separated.
    pub expected: String,
}

/// The value named `value` in `names`, the component's one table of names.
fn parse_named<T: Copy>(
    names: &[(&'static str, T)],
    component: &'static str,
    value: &str,
) -> Result<T, UnknownComponent> {
    names
        .iter()
        .find(|(n, _)| *n == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| UnknownComponent {
            component,
            value: value.to_string(),
            expected: names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        })
}

/// A menu by its row name ([`Menu::name`]): `routed`, `fixed`, `router`, or
/// `retrieval_k<k>` with `k` from 1 to [`Menu::MAX_K`].
impl FromStr for Menu {
    type Err = UnknownComponent;

    fn from_str(s: &str) -> Result<Menu, UnknownComponent> {
        let unknown = || UnknownComponent {
            component: "menu",
            value: s.to_string(),
            expected: format!(
                "routed, fixed, router, retrieval_k<k> (k from 1 to {})",
                Menu::MAX_K
            ),
        };
        if let Some(digits) = s.strip_prefix("retrieval_k") {
            // One spelling per menu: `retrieval_k08` is not `retrieval_k8`'s name.
            return match digits.parse::<u16>() {
                Ok(k) if (1..=Menu::MAX_K).contains(&k) && k.to_string() == digits => {
                    Ok(Menu::Retrieval { k })
                }
                _ => Err(unknown()),
            };
        }
        match parse_named(&Menu::NAMES, "menu", s) {
            Ok(Menu::Retrieval { .. }) | Err(_) => Err(unknown()),
            Ok(menu) => Ok(menu),
        }
    }
}

impl fmt::Display for Menu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Delivery {
    type Err = UnknownComponent;

    fn from_str(s: &str) -> Result<Delivery, UnknownComponent> {
        parse_named(&Delivery::NAMES, "delivery", s)
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&name_of(&Delivery::NAMES, *self))
    }
}

impl FromStr for Actor {
    type Err = UnknownComponent;

    fn from_str(s: &str) -> Result<Actor, UnknownComponent> {
        parse_named(&Actor::NAMES, "actor", s)
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&name_of(&Actor::NAMES, *self))
    }
}

/// A prompt by its manifest name (`base`, `workflow`, `interface_guide`); its name as a
/// repair in rows is [`PromptVariant::repair_name`].
impl FromStr for PromptVariant {
    type Err = UnknownComponent;

    fn from_str(s: &str) -> Result<PromptVariant, UnknownComponent> {
        parse_named(&PromptVariant::NAMES, "prompt", s)
    }
}

/// The manifest name of a component value.
pub fn name_of<T: PartialEq + Copy>(names: &[(&'static str, T)], value: T) -> String {
    names
        .iter()
        .find(|(_, v)| *v == value)
        .map_or_else(String::new, |(n, _)| (*n).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_component_value_has_a_name() {
        for (_, m) in Menu::NAMES {
            assert!(!m.name().is_empty());
        }
        assert_eq!(Menu::Retrieval { k: 8 }.name(), "retrieval_k8");
        assert_eq!(Menu::Router.name(), "router");
        let cols = ArmForm::baseline().columns();
        assert_eq!(
            cols.map(|(_, v)| v),
            ["none", "routed", "native", "model"].map(String::from)
        );
        for (_, d) in Delivery::NAMES {
            assert!(!name_of(&Delivery::NAMES, d).is_empty());
        }
        for (_, a) in Actor::NAMES {
            assert!(!name_of(&Actor::NAMES, a).is_empty());
        }
        assert_eq!(Delivery::Native.encoding(), None);
        assert!(Actor::Controller.delegates() && !Actor::Model.delegates());
    }

    #[test]
    fn every_component_parses_back_from_its_name() {
        let menus = [
            Menu::Routed,
            Menu::Fixed,
            Menu::Router,
            Menu::Retrieval { k: 1 },
            Menu::Retrieval { k: 8 },
            Menu::Retrieval { k: Menu::MAX_K },
        ];
        for m in menus {
            assert_eq!(m.to_string().parse::<Menu>(), Ok(m));
        }
        for d in Delivery::NAMES.map(|(_, d)| d) {
            assert_eq!(d.to_string().parse::<Delivery>(), Ok(d));
        }
        for a in Actor::NAMES.map(|(_, a)| a) {
            assert_eq!(a.to_string().parse::<Actor>(), Ok(a));
        }
        for (name, p) in PromptVariant::NAMES {
            assert_eq!(name.parse::<PromptVariant>(), Ok(p));
        }
    }

    #[test]
    fn every_row_name_is_one_menus_or_one_repairs_and_reads_back() {
        let lanes = Menu::row_names();
        assert_eq!(lanes.len(), 3 + usize::from(Menu::MAX_K));
        assert_eq!(lanes[..4], ["routed", "fixed", "router", "retrieval_k1"]);
        let distinct: std::collections::BTreeSet<&str> = lanes.iter().copied().collect();
        assert_eq!(distinct.len(), lanes.len());
        for name in lanes {
            let menu = name.parse::<Menu>().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(menu.name(), *name);
        }
        assert_eq!(
            PromptVariant::repair_names(),
            ["none", "workflow_prompt", "interface_guide"]
        );
        for (_, p) in PromptVariant::NAMES {
            assert_eq!(PromptVariant::of_repair_name(p.repair_name()), Some(p));
        }
        assert_eq!(PromptVariant::of_repair_name("base"), None);
    }

    #[test]
    fn a_name_that_is_no_component_value_says_what_is() {
        for bad in [
            "retrieval",
            "retrieval_k0",
            "retrieval_k129",
            "retrieval_k08",
            "Routed",
            "",
        ] {
            let e = bad
                .parse::<Menu>()
                .err()
                .unwrap_or_else(|| panic!("{bad:?} parsed"));
            assert_eq!(e.component, "menu");
            assert!(e.to_string().contains("retrieval_k<k>"), "{e}");
        }
        let e = "canon"
            .parse::<Delivery>()
            .err()
            .unwrap_or_else(|| panic!("parsed"));
        assert_eq!(
            e.to_string(),
            "`canon` is not a delivery (expected one of native, canonical)"
        );
        assert!("interface-guide".parse::<PromptVariant>().is_err());
    }
}
