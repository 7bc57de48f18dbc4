//! The reference program (a dependency graph of calls) and the certified minimum number
//! of calls, found by a shortest-program search over the variant's visible tools.
//!
//! The search treats what an agent can know as tokens: search queries, record ids,
//! observed facts (a requested fact read on a *current* record of the *route*), and the
//! permitted state change done. A search tool turns a query into the ids of the records
//! it lists; a read tool turns an id into the record's hand-off query and facts; the
//! permitted write needs its target id and the facts its arguments name. Knowledge only
//! grows, so the search first runs every applicable call once (a relaxed fixpoint),
//! keeps the calls that can contribute to the goal (backward relevance: no other call
//! can be part of a shortest program), and then runs breadth-first search over sets of
//! known tokens. The result is exact for this model of tool semantics, which is the
//! sandbox's own (both use [`super::store::Store`]).
//!
//! Dependencies in the reference program are *data* dependencies: a call comes after
//! the call that revealed each value in its arguments. Any topological order of the
//! graph is a valid program.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use petgraph::algo::toposort;
use petgraph::graph::DiGraph;
use serde::Serialize;
use serde_json::{json, Value as Json};

use super::menu::Tool;
use super::store::{Status, Store};
use crate::family::Operation;

/// One tool call with canonical arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Call {
    /// Tool name.
    pub tool: String,
    /// Arguments (a JSON object).
    pub arguments: Json,
}

/// A step of the reference program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The call.
    pub call: Call,
    /// Indices of steps that must come before (they reveal values this call uses).
    pub after: Vec<usize>,
}

/// The reference program: a dependency graph of calls, stored as steps in one valid
/// order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Program {
    /// Steps, in a valid order.
    pub steps: Vec<Step>,
}

impl Program {
    /// The dependency graph (edge `a -> b`: `a` must come before `b`).
    pub fn graph(&self) -> DiGraph<usize, ()> {
        let mut g = DiGraph::new();
        let nodes: Vec<_> = (0..self.steps.len()).map(|i| g.add_node(i)).collect();
        for (i, s) in self.steps.iter().enumerate() {
            for &a in &s.after {
                g.add_edge(nodes[a], nodes[i], ());
            }
        }
        g
    }

    /// Whether the graph is acyclic and the stored order respects it.
    pub fn is_well_formed(&self) -> bool {
        toposort(&self.graph(), None).is_ok()
            && self
                .steps
                .iter()
                .enumerate()
                .all(|(i, s)| s.after.iter().all(|&a| a < i))
    }

    /// Every dependency-valid order of the steps, up to `limit` orders.
    pub fn valid_orders(&self, limit: usize) -> Vec<Vec<usize>> {
        let n = self.steps.len();
        let mut out = Vec::new();
        let mut order = Vec::with_capacity(n);
        let mut placed = vec![false; n];
        self.extend_orders(&mut order, &mut placed, &mut out, limit);
        out
    }

    fn extend_orders(
        &self,
        order: &mut Vec<usize>,
        placed: &mut [bool],
        out: &mut Vec<Vec<usize>>,
        limit: usize,
    ) {
        if out.len() >= limit {
            return;
        }
        if order.len() == self.steps.len() {
            out.push(order.clone());
            return;
        }
        for i in 0..self.steps.len() {
            if !placed[i] && self.steps[i].after.iter().all(|&a| placed[a]) {
                placed[i] = true;
                order.push(i);
                self.extend_orders(order, placed, out, limit);
                order.pop();
                placed[i] = false;
            }
        }
    }
}

/// The goal of the shortest-program search.
#[derive(Debug, Clone)]
pub struct Goal {
    /// The route connector id: only its current records supply facts.
    pub route: String,
    /// Requested fact names.
    pub facts: Vec<String>,
    /// The permitted write, as the call that performs it, with the facts its arguments
    /// use and the record id it targets.
    pub write: Option<(Call, Vec<String>, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Token {
    Query(String),
    Id(String),
    Fact(String),
    WriteDone,
}

#[derive(Debug, Clone)]
struct Action {
    call: Call,
    pre: Vec<usize>,
    post: Vec<usize>,
}

#[derive(Default)]
struct Interner {
    ids: HashMap<Token, usize>,
    tokens: Vec<Token>,
}

impl Interner {
    fn get(&mut self, t: Token) -> (usize, bool) {
        if let Some(&i) = self.ids.get(&t) {
            return (i, false);
        }
        let i = self.tokens.len();
        self.ids.insert(t.clone(), i);
        self.tokens.push(t);
        (i, true)
    }
}

/// The length of the shortest program over `menu` that observes every requested fact on
/// current route records and performs the permitted write, with one such program.
/// `None` if no program exists.
pub fn shortest_program(
    store: &Store,
    menu: &[Tool],
    start_query: &str,
    goal: &Goal,
) -> Option<Vec<Call>> {
    let search_tools: HashMap<&str, &Tool> = menu
        .iter()
        .filter(|t| t.op == Operation::Search)
        .map(|t| (t.connector.as_str(), t))
        .collect();
    let read_tools: HashMap<(&str, &str), &Tool> = menu
        .iter()
        .filter(|t| t.op == Operation::Read)
        .filter_map(|t| Some(((t.connector.as_str(), t.kind.as_deref()?), t)))
        .collect();

    // 1. Relaxed forward fixpoint: every call applicable with everything reachable.
    let mut tokens = Interner::default();
    let mut actions: Vec<Action> = Vec::new();
    let mut queue = VecDeque::new();
    let (start, _) = tokens.get(Token::Query(start_query.to_string()));
    queue.push_back(start);
    let goal_facts: Vec<usize> = goal
        .facts
        .iter()
        .map(|f| tokens.get(Token::Fact(f.clone())).0)
        .collect();
    let write_done = goal.write.as_ref().map(|_| tokens.get(Token::WriteDone).0);
    let mut known: HashSet<usize> = HashSet::new();
    while let Some(t) = queue.pop_front() {
        if !known.insert(t) {
            continue;
        }
        let mut new_actions = Vec::new();
        match tokens.tokens[t].clone() {
            Token::Query(q) => {
                let mut by_tool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
                for r in store.with_reference(&q) {
                    if let Some(tool) = search_tools.get(r.connector.as_str()) {
                        let (id, _) = tokens.get(Token::Id(r.id.clone()));
                        by_tool.entry(tool.name.as_str()).or_default().push(id);
                    }
                }
                for (tool, post) in by_tool {
                    new_actions.push(Action {
                        call: Call {
                            tool: tool.to_string(),
                            arguments: json!({ "query": q }),
                        },
                        pre: vec![t],
                        post,
                    });
                }
            }
            Token::Id(id) => {
                let Some(r) = store.by_id(&id) else { continue };
                let Some(tool) = read_tools.get(&(r.connector.as_str(), r.kind.as_str())) else {
                    continue;
                };
                let mut post = Vec::new();
                if let Some(h) = &r.next_handoff {
                    post.push(tokens.get(Token::Query(h.query.clone())).0);
                }
                if r.status == Status::Current && r.connector == goal.route {
                    for f in &goal.facts {
                        if r.fields.contains_key(f) {
                            post.push(tokens.get(Token::Fact(f.clone())).0);
                        }
                    }
                }
                new_actions.push(Action {
                    call: Call {
                        tool: tool.name.clone(),
                        arguments: json!({ "id": id }),
                    },
                    pre: vec![t],
                    post,
                });
            }
            Token::Fact(_) | Token::WriteDone => {}
        }
        for a in new_actions {
            queue.extend(a.post.iter().copied());
            actions.push(a);
        }
    }
    if let (Some((call, facts, target)), Some(done)) = (&goal.write, write_done) {
        if !menu.iter().any(|t| t.name == call.tool) {
            return None;
        }
        let mut pre: Vec<usize> = facts
            .iter()
            .map(|f| tokens.get(Token::Fact(f.clone())).0)
            .collect();
        if let Some(id) = target {
            pre.push(tokens.get(Token::Id(id.clone())).0);
        }
        actions.push(Action {
            call: call.clone(),
            pre,
            post: vec![done],
        });
    }

    // 2. Backward relevance from the goal tokens.
    let mut goal_tokens = goal_facts.clone();
    goal_tokens.extend(write_done);
    let mut relevant_tokens: HashSet<usize> = goal_tokens.iter().copied().collect();
    let mut relevant = vec![false; actions.len()];
    loop {
        let mut changed = false;
        for (i, a) in actions.iter().enumerate() {
            if !relevant[i] && a.post.iter().any(|p| relevant_tokens.contains(p)) {
                relevant[i] = true;
                changed = true;
                relevant_tokens.extend(a.pre.iter().copied());
            }
        }
        if !changed {
            break;
        }
    }
    let actions: Vec<&Action> = actions
        .iter()
        .zip(&relevant)
        .filter_map(|(a, &r)| r.then_some(a))
        .collect();

    // 3. Breadth-first search over sets of relevant known tokens.
    let mut index: Vec<usize> = relevant_tokens.into_iter().collect();
    index.sort_unstable();
    let bit = |t: usize| index.binary_search(&t).ok();
    let words = index.len().div_ceil(64).max(1);
    let mask = |ts: &[usize]| {
        let mut m = vec![0u64; words];
        for &t in ts {
            if let Some(b) = bit(t) {
                m[b / 64] |= 1 << (b % 64);
            }
        }
        m
    };
    let covers = |state: &[u64], m: &[u64]| state.iter().zip(m).all(|(s, x)| s & x == *x);
    let goal_mask = mask(&goal_tokens);
    let compiled: Vec<(Vec<u64>, Vec<u64>)> = actions
        .iter()
        .map(|a| (mask(&a.pre), mask(&a.post)))
        .collect();
    let start_state = mask(&[start]);
    let mut seen: HashMap<Vec<u64>, (Option<Vec<u64>>, usize)> = HashMap::new();
    seen.insert(start_state.clone(), (None, usize::MAX));
    let mut frontier = VecDeque::from([start_state]);
    while let Some(state) = frontier.pop_front() {
        if covers(&state, &goal_mask) {
            let mut plan = Vec::new();
            let mut cur = state;
            while let Some((Some(prev), a)) = seen.get(&cur).cloned() {
                plan.push(actions[a].call.clone());
                cur = prev;
            }
            plan.reverse();
            return Some(plan);
        }
        for (i, (pre, post)) in compiled.iter().enumerate() {
            if covers(&state, pre) && !covers(&state, post) {
                let next: Vec<u64> = state.iter().zip(post).map(|(s, p)| s | p).collect();
                if !seen.contains_key(&next) {
                    seen.insert(next.clone(), (Some(state.clone()), i));
                    frontier.push_back(next);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tool: &str, after: &[usize]) -> Step {
        Step {
            call: Call {
                tool: tool.into(),
                arguments: json!({}),
            },
            after: after.to_vec(),
        }
    }

    #[test]
    fn valid_orders_are_the_linear_extensions() {
        // a -> b -> c, and w after a only: w can sit in three places.
        let p = Program {
            steps: vec![
                step("a", &[]),
                step("b", &[0]),
                step("c", &[1]),
                step("w", &[0]),
            ],
        };
        assert!(p.is_well_formed());
        let orders = p.valid_orders(100);
        assert_eq!(orders.len(), 3);
        assert!(orders.contains(&vec![0, 3, 1, 2]));
        assert!(orders.contains(&vec![0, 1, 2, 3]));
        assert_eq!(p.valid_orders(2).len(), 2);
    }

    #[test]
    fn a_step_before_its_dependency_is_not_well_formed() {
        let p = Program {
            steps: vec![step("b", &[1]), step("a", &[])],
        };
        assert!(!p.is_well_formed());
    }
}
