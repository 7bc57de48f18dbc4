//! The levels a row carries and the harness contract's constants, as the tables and
//! the analyses name them: a family's domain and split, the pressures of a cell (V, W,
//! D, R, depth), the components of an arm (prompt, menu, delivery, actor), how an
//! episode ended (terminal flag, first unmet obligation, stop reason, infrastructure
//! cause), what a response was (finish reason, response kind, reasoning source), the
//! completion cap and the episode budget.
//!
//! The types are the core's, the harness's and the agent's own (re-exported, never
//! copied), so a level means one thing from the compiler to the report; the analyses
//! reach them only through here, which keeps the analysis crate off the core and the
//! harness. A row field holds the level itself, so a misspelt or renamed level does not
//! compile.
//!
//! Owns: [`RowName`] and [`by_row_name`], how a row writes the two levels whose name in
//! the tables is not their serde name: the arm's menu (`lane`: a retrieval menu is
//! `retrieval_k<k>`, [`Menu::name`]) and its prompt (`repair`: `none`,
//! `workflow_prompt`, `interface_guide`, [`PromptVariant::repair_name`]).
//!
//! Never: defines a level of its own or renames one (a level's name is its serde name,
//! [`level_name`], or the harness's row name above).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, EnumAccess, VariantAccess, Visitor};

pub use crate::requests::ResponseKind;
pub use tbb_core::compile::cell::{
    level_name, Cell, Encoding, Routing, Workflow, FRONTIER_DEPTHS, MENU_SIZES,
};
pub use tbb_core::family::{Domain, Split};
pub use tbb_core::grade::trace::{FinishReason, InfraCause, StopReason};
pub use tbb_core::grade::{Obligation, TerminalFlag, EPISODE_BUDGET};
pub use tbb_harness::{
    Actor, Arm, ArmForm, Delivery, Menu, PromptVariant, ReasoningSource, COMPLETION_CAP,
};

/// A level whose name in the tables is not its serde name (which keys and manifests
/// keep): a row field of it says `#[serde(with = "crate::levels::by_row_name")]`.
pub trait RowName: Copy + 'static {
    /// What the level is, in errors and in the traced layout (`lane`).
    const WHAT: &'static str;

    /// Every name it takes in rows: a closed set.
    fn row_names() -> &'static [&'static str];

    /// Its name in rows.
    fn row_name(self) -> Cow<'static, str>;

    /// The level of a row name; the error says which names there are.
    fn of_row_name(name: &str) -> Result<Self, String>;
}

impl RowName for Menu {
    const WHAT: &'static str = "lane";

    fn row_names() -> &'static [&'static str] {
        Menu::row_names()
    }

    fn row_name(self) -> Cow<'static, str> {
        Cow::Owned(self.name())
    }

    fn of_row_name(name: &str) -> Result<Menu, String> {
        name.parse()
            .map_err(|e: tbb_harness::arm::UnknownComponent| e.to_string())
    }
}

impl RowName for PromptVariant {
    const WHAT: &'static str = "repair";

    fn row_names() -> &'static [&'static str] {
        PromptVariant::repair_names()
    }

    fn row_name(self) -> Cow<'static, str> {
        Cow::Borrowed(self.repair_name())
    }

    fn of_row_name(name: &str) -> Result<PromptVariant, String> {
        PromptVariant::of_repair_name(name).ok_or_else(|| {
            format!(
                "`{name}` is not a repair (expected one of {})",
                PromptVariant::repair_names().join(", ")
            )
        })
    }
}

/// Writes a [`RowName`] level as its row name and reads it back, refusing any other
/// name. It reads as an enum of unit variants (the row names), the way the other levels
/// read: a table's layout traces it as text, and serde_json and serde_arrow hand it
/// over by name.
pub mod by_row_name {
    use serde::{Deserializer, Serializer};

    use super::{RowName, RowNameVisitor};

    /// The level's row name.
    pub fn serialize<T: RowName, S: Serializer>(level: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&level.row_name())
    }

    /// The level named.
    pub fn deserialize<'de, T: RowName, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        d.deserialize_enum(
            T::WHAT,
            T::row_names(),
            RowNameVisitor(std::marker::PhantomData),
        )
    }
}

struct RowNameVisitor<T>(PhantomData<T>);

impl<'de, T: RowName> Visitor<'de> for RowNameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} name", T::WHAT)
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<T, E> {
        T::of_row_name(name).map_err(E::custom)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<T, A::Error> {
        let (name, unit): (String, _) = data.variant()?;
        unit.unit_variant()?;
        T::of_row_name(&name).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Arms {
        #[serde(with = "by_row_name")]
        lane: Menu,
        #[serde(with = "by_row_name")]
        repair: PromptVariant,
    }

    #[test]
    fn a_row_name_round_trips_through_json_and_refuses_a_stranger() {
        let arms = Arms {
            lane: Menu::Retrieval { k: 8 },
            repair: PromptVariant::Workflow,
        };
        let json = serde_json::to_string(&arms).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"lane":"retrieval_k8","repair":"workflow_prompt"}"#
        );
        assert_eq!(serde_json::from_str::<Arms>(&json).ok(), Some(arms));
        let bad = serde_json::from_str::<Arms>(r#"{"lane":"routed","repair":"workflow"}"#);
        let why = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(why.contains("`workflow` is not a repair"), "{why}");
    }
}
