//! A small memo keyed by a menu's content: what a wire client renders once per menu
//! (its tool array) and what the transcript stores once per menu (its blob), since
//! every request of every episode of a variant shows the same menu.
//!
//! A menu is found by content (`==` on the schemas, which allocates nothing, compares
//! shared parameter trees by address first and stops at the first differing name),
//! never by address or hash alone, so a hit is exactly the menu asked for. At most
//! [`MenuMemo::CAPACITY`] menus are kept, the most recent.
//!
//! Never: decides what is made from a menu; the caller's `make` does.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tbb_agent::ToolSchema;

/// A menu and what was made from it.
pub type Memoised<V> = Arc<(Vec<ToolSchema>, V)>;

/// What was made from each of the menus seen lately.
#[derive(Debug)]
pub struct MenuMemo<V> {
    entries: Mutex<VecDeque<Memoised<V>>>,
}

impl<V> Default for MenuMemo<V> {
    fn default() -> Self {
        MenuMemo::new()
    }
}

impl<V> MenuMemo<V> {
    /// Menus kept.
    pub const CAPACITY: usize = 64;

    /// An empty memo (usable in a `static`).
    pub const fn new() -> MenuMemo<V> {
        MenuMemo {
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// What `make` made of `tools` (called on a miss only).
    pub fn get(&self, tools: &[ToolSchema], make: impl FnOnce(&[ToolSchema]) -> V) -> Memoised<V> {
        // A poisoned lock only means a panic elsewhere mid-lookup; the entries are
        // immutable, so they are still right.
        let found = {
            let entries = self
                .entries
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            entries.iter().rev().find(|m| m.0 == tools).cloned()
        };
        if let Some(m) = found {
            return m;
        }
        let made = Arc::new((tools.to_vec(), make(tools)));
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() >= Self::CAPACITY {
            entries.pop_front();
        }
        entries.push_back(made.clone());
        made
    }

    /// Menus held.
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    /// Whether no menu is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recent_menus_are_kept() {
        let memo = MenuMemo::new();
        let menu = |i: usize| {
            vec![ToolSchema {
                name: format!("t{i}"),
                description: String::new(),
                parameters: serde_json::Value::Null.into(),
            }]
        };
        for i in 0..MenuMemo::<String>::CAPACITY + 1 {
            memo.get(&menu(i), |t| t[0].name.clone());
        }
        assert_eq!(memo.len(), MenuMemo::<String>::CAPACITY);
        assert_eq!(
            memo.get(&menu(MenuMemo::<String>::CAPACITY), |_| "again".into())
                .1,
            "t64"
        );
        // The oldest was dropped and is made again.
        assert_eq!(memo.get(&menu(0), |_| "again".into()).1, "again");
    }
}
