//! The scheduler of an apply: which of the plan's nodes this run takes ([`Filter`]),
//! and which episode starts next ([`Scheduler`]): a slot per unit of its route's
//! concurrency, the manifest's order within a route, and an ordered schedule's arm
//! only after the arm it follows has ended.
//!
//! A route's breaker stops it after its `max_infra_failures` consecutive episodes ended
//! as infrastructure failures (`--max-infra-failures` overrides the catalogue; 0 never
//! stops): its episodes not yet started then never start in this run, and the caller
//! leaves them unrecorded, so the next plan still runs them.
//!
//! Owns: the selection of the nodes a run executes (the seam of a shard: a [`Filter`]
//! admits the execute nodes of its conditions; the compile and grade nodes they need
//! follow), the slots of each provider route, and the order episodes start in.
//!
//! Never: runs a node, reads or writes the cache, or decides whether a node is stale
//! (the plan does). It hands out node indices and takes them back when they end; it
//! holds no result, so the order it picks cannot change one (every episode is seeded
//! from its own key).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use petgraph::graph::NodeIndex;

use super::dag::{Dag, Work};
use super::key::NodeKind;
use super::plan::Plan;
use tbb_provider::Configuration;

/// Which of the plan's nodes a run takes: the seam a shard plugs into (`tbb apply
/// --shard i/n` admits the execute nodes of its conditions and publishes nothing).
pub trait Filter: Send + Sync {
    /// Whether this run executes the episode of execute node `execute` (its grade node
    /// and the compile node it needs follow it).
    fn executes(&self, dag: &Dag, execute: NodeIndex) -> bool;

    /// Whether this run computes the analyses and publishes the tables.
    fn publishes(&self) -> bool {
        true
    }

    /// This run's slots of each route, given the route's whole `concurrency` ([`routes`]):
    /// a shard takes its share, so that the shards of a study together keep the limit.
    fn slots(&self, slots: &[usize]) -> Vec<usize> {
        slots.to_vec()
    }
}

/// The filter of a whole study: every node the plan runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Everything;

impl Filter for Everything {
    fn executes(&self, _: &Dag, _: NodeIndex) -> bool {
        true
    }
}

/// The nodes of `plan` this run takes under `filter`: the planned nodes it admits, a
/// grade node with its execute node, a compile node when something taken or
/// published reads it.
pub fn selected(dag: &Dag, plan: &Plan, filter: &dyn Filter) -> HashSet<NodeIndex> {
    let planned = plan
        .nodes
        .iter()
        .filter(|p| p.action.runs())
        .filter_map(|p| p.node);
    let publishes = filter.publishes();
    let admitted: HashSet<NodeIndex> = planned
        .filter(|&i| match dag.graph[i].work {
            Work::Compile { .. } => true,
            Work::Execute { .. } | Work::Scenario { .. } => filter.executes(dag, i),
            Work::Grade { execute, .. } => filter.executes(dag, execute),
            Work::ScenarioGrade { run } => filter.executes(dag, run),
            Work::Analysis { .. } | Work::Table(_) => publishes,
        })
        .collect();
    if publishes {
        return admitted;
    }
    // Without the tables, a compile node runs only for the episodes taken.
    let needed: HashSet<NodeIndex> = admitted
        .iter()
        .filter_map(|&i| match dag.graph[i].work {
            Work::Execute { compile, .. } | Work::Grade { compile, .. } => Some(compile),
            _ => None,
        })
        .collect();
    admitted
        .into_iter()
        .filter(|i| dag.graph[*i].kind != NodeKind::Compile || needed.contains(i))
        .collect()
}

/// One episode to schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Its execute node.
    pub node: NodeIndex,
    /// Index of its route in the slots.
    pub route: usize,
    /// The execute node that must end before it starts (the previous arm of an ordered
    /// schedule), when that node runs in this apply too.
    pub after: Option<NodeIndex>,
}

/// The routes of a study's configurations, each with its slots: the route's
/// `concurrency` (the first configuration naming it sets it, as [`RouteLimits`] does),
/// at least 1 and at most 256. Returns the route index of each configuration and the
/// slots of each route.
///
/// [`RouteLimits`]: tbb_provider::retry::RouteLimits
pub fn routes(configs: &[Configuration]) -> (Vec<usize>, Vec<usize>) {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut slots = Vec::new();
    let of_config = configs
        .iter()
        .map(|c| {
            *index.entry(c.route()).or_insert_with(|| {
                slots.push((c.concurrency.max(1) as usize).min(256));
                slots.len() - 1
            })
        })
        .collect();
    (of_config, slots)
}

/// The breaker threshold of each route, indexed as [`routes`] indexes them: `given`
/// (the command line's), else the first configuration naming the route's
/// `max_infra_failures`, else [`DEFAULT_MAX_INFRA_FAILURES`]; 0 never stops a route.
///
/// [`DEFAULT_MAX_INFRA_FAILURES`]: tbb_provider::config::DEFAULT_MAX_INFRA_FAILURES
pub fn breakers(configs: &[Configuration], given: Option<u32>) -> Vec<u32> {
    let mut seen = HashSet::new();
    configs
        .iter()
        .filter(|c| seen.insert(c.route()))
        .map(|c| {
            given
                .or(c.max_infra_failures)
                .unwrap_or(tbb_provider::config::DEFAULT_MAX_INFRA_FAILURES)
        })
        .collect()
}

/// The episodes of `dag` among `runs` (execute nodes, and scenario nodes of a study
/// that plays ToolSandbox), in DAG order, each with its route and the execute node it
/// waits for.
pub fn units(dag: &Dag, runs: &HashSet<NodeIndex>, route_of_config: &[usize]) -> Vec<Unit> {
    dag.nodes()
        .filter(|(i, _)| runs.contains(i))
        .filter_map(|(i, n)| match n.work {
            Work::Execute { config, after, .. } => Some(Unit {
                node: i,
                route: route_of_config.get(config).copied().unwrap_or(0),
                after: after.filter(|a| runs.contains(a)),
            }),
            Work::Scenario { config, .. } => Some(Unit {
                node: i,
                route: route_of_config.get(config).copied().unwrap_or(0),
                after: None,
            }),
            _ => None,
        })
        .collect()
}

/// Which episode starts next. Each route has its slots; within a route episodes start
/// in the order given (the DAG's), except that one whose predecessor has not ended
/// waits aside and goes first once it has. Between routes, the earliest episode whose
/// route has a free slot starts first.
#[derive(Debug)]
pub struct Scheduler {
    /// Per route: its episodes not yet started, with their place in the given order.
    queues: Vec<VecDeque<(usize, Unit)>>,
    /// Per route: episodes whose predecessor has ended, before the queue.
    released: Vec<VecDeque<Unit>>,
    /// Per route: free slots.
    free: Vec<usize>,
    /// Route of each episode started and not ended.
    running: HashMap<NodeIndex, usize>,
    /// Episodes not yet ended (started or not).
    unfinished: HashSet<NodeIndex>,
    /// Episodes waiting for the one they follow, by that one.
    waiting: HashMap<NodeIndex, Vec<Unit>>,
    /// Per route: its breaker.
    breakers: Vec<Breaker>,
    /// Route of each episode started and deferred ([`Scheduler::defer`]).
    deferred: HashMap<NodeIndex, usize>,
}

/// A route's breaker: how many episodes in a row ended as infrastructure failures, and
/// whether that reached its threshold.
#[derive(Debug, Clone, Copy, Default)]
struct Breaker {
    /// Consecutive infrastructure failures that stop the route (0: never).
    threshold: u32,
    /// Infrastructure failures since the route's last episode that did not end as one.
    consecutive: u32,
    stopped: bool,
}

impl Scheduler {
    /// A schedule of `units` (in the order they should start) over routes with
    /// `slots` each.
    pub fn new(units: Vec<Unit>, slots: &[usize]) -> Scheduler {
        let mut queues = vec![VecDeque::new(); slots.len()];
        let unfinished = units.iter().map(|u| u.node).collect();
        for (place, unit) in units.into_iter().enumerate() {
            if let Some(queue) = queues.get_mut(unit.route) {
                queue.push_back((place, unit));
            }
        }
        Scheduler {
            released: vec![VecDeque::new(); slots.len()],
            free: slots.iter().map(|&s| s.max(1)).collect(),
            queues,
            running: HashMap::new(),
            unfinished,
            waiting: HashMap::new(),
            breakers: vec![Breaker::default(); slots.len()],
            deferred: HashMap::new(),
        }
    }

    /// The same schedule with each route's breaker threshold ([`breakers`]); without,
    /// no route is ever stopped.
    pub fn with_breakers(mut self, thresholds: &[u32]) -> Scheduler {
        for (breaker, &threshold) in self.breakers.iter_mut().zip(thresholds) {
            breaker.threshold = threshold;
        }
        self
    }

    /// The next episode to start, taking a slot of its route; `None` when every route
    /// with work is full or nothing is left to start now.
    pub fn start_next(&mut self) -> Option<NodeIndex> {
        loop {
            let route = self.pick()?;
            let unit = match self.released[route].pop_front() {
                Some(u) => u,
                None => self.queues[route].pop_front()?.1,
            };
            if let Some(before) = unit.after.filter(|b| self.unfinished.contains(b)) {
                self.waiting.entry(before).or_default().push(unit);
                continue;
            }
            self.free[route] -= 1;
            self.running.insert(unit.node, route);
            return Some(unit.node);
        }
    }

    /// The route to take from: a released episode first (its schedule waited for it),
    /// else the earliest queued episode of a route with a free slot.
    fn pick(&self) -> Option<usize> {
        let open = |r: &usize| self.free[*r] > 0 && !self.breakers[*r].stopped;
        if let Some(r) = (0..self.free.len())
            .filter(open)
            .find(|&r| !self.released[r].is_empty())
        {
            return Some(r);
        }
        (0..self.free.len())
            .filter(open)
            .filter_map(|r| self.queues[r].front().map(|(place, _)| (*place, r)))
            .min()
            .map(|(_, r)| r)
    }

    /// Episode `node` ended (however it ended, or could not start): its slot is free and
    /// the arm that follows it may start.
    pub fn finished(&mut self, node: NodeIndex) {
        if let Some(route) = self.running.remove(&node) {
            self.free[route] += 1;
        }
        self.deferred.remove(&node);
        self.unfinished.remove(&node);
        for unit in self.waiting.remove(&node).unwrap_or_default() {
            self.released[unit.route].push_back(unit);
        }
    }

    /// Episode `node`, which started, ended: as [`Scheduler::finished`], and counted by
    /// its route's breaker (`infra`: it ended as an infrastructure failure). Returns
    /// the route when this ending stopped it, with the failures in a row that did.
    pub fn ended(&mut self, node: NodeIndex, infra: bool) -> Option<(usize, u32)> {
        let route = self.running.get(&node).copied();
        self.finished(node);
        let breaker = self.breakers.get_mut(route?)?;
        if !infra {
            breaker.consecutive = 0;
            return None;
        }
        breaker.consecutive += 1;
        let trips = breaker.threshold > 0 && breaker.consecutive >= breaker.threshold;
        if trips && !breaker.stopped {
            breaker.stopped = true;
            return Some((route?, breaker.consecutive));
        }
        None
    }

    /// Episode `node`, which started, will not run here for now (another process
    /// holds its claim): its slot is free, but the arm that follows it waits until it
    /// is [`Scheduler::finished`] or [`Scheduler::resume`]d and has ended.
    pub fn defer(&mut self, node: NodeIndex) {
        if let Some(route) = self.running.remove(&node) {
            self.free[route] += 1;
            self.deferred.insert(node, route);
        }
    }

    /// Deferred episode `node` is to run here after all (its holder's claim expired
    /// and this process took it over): it starts before anything else of its route.
    pub fn resume(&mut self, node: NodeIndex) {
        if let Some(route) = self.deferred.remove(&node) {
            self.released[route].push_front(Unit {
                node,
                route,
                after: None,
            });
        }
    }

    /// Episodes that did not start and will not: those of stopped routes, and those
    /// waiting for one of them. Only meaningful once nothing is in flight.
    pub fn not_started(&self) -> Vec<NodeIndex> {
        let mut left: Vec<NodeIndex> = self
            .queues
            .iter()
            .flat_map(|q| q.iter().map(|(_, u)| u.node))
            .chain(self.released.iter().flat_map(|q| q.iter().map(|u| u.node)))
            .chain(self.waiting.values().flat_map(|w| w.iter().map(|u| u.node)))
            .collect();
        left.sort();
        left
    }

    /// Episodes started and not ended.
    pub fn in_flight(&self) -> usize {
        self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(i: u32) -> NodeIndex {
        NodeIndex::new(i as usize)
    }

    fn unit(i: u32, route: usize, after: Option<u32>) -> Unit {
        Unit {
            node: n(i),
            route,
            after: after.map(n),
        }
    }

    /// Starts what can start now.
    fn drain(s: &mut Scheduler) -> Vec<u32> {
        std::iter::from_fn(|| s.start_next())
            .map(|i| i.index() as u32)
            .collect()
    }

    #[test]
    fn a_route_runs_at_most_its_slots_in_order() {
        let mut s = Scheduler::new((0..5).map(|i| unit(i, 0, None)).collect(), &[2]);
        assert_eq!(drain(&mut s), [0, 1]);
        assert_eq!(s.in_flight(), 2);
        s.finished(n(1));
        assert_eq!(drain(&mut s), [2]);
        s.finished(n(0));
        s.finished(n(2));
        assert_eq!(drain(&mut s), [3, 4]);
        s.finished(n(3));
        s.finished(n(4));
        assert_eq!(drain(&mut s), Vec::<u32>::new());
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn a_full_route_does_not_hold_back_another() {
        // Route 0 has one slot, route 1 two: the earliest startable episode goes first,
        // and route 1's episodes start while route 0's wait.
        let units = vec![
            unit(0, 0, None),
            unit(1, 0, None),
            unit(2, 1, None),
            unit(3, 0, None),
            unit(4, 1, None),
            unit(5, 1, None),
        ];
        let mut s = Scheduler::new(units, &[1, 2]);
        assert_eq!(drain(&mut s), [0, 2, 4]);
        s.finished(n(2));
        assert_eq!(drain(&mut s), [5]);
        s.finished(n(0));
        assert_eq!(drain(&mut s), [1]);
        s.finished(n(1));
        assert_eq!(drain(&mut s), [3]);
    }

    #[test]
    fn an_ordered_arm_waits_for_the_arm_before_it_and_then_goes_first() {
        // Conditions (0 > 1) and (2), then 3; two slots: 1 waits aside for 0, and once
        // 0 ends it starts before 3, which is ahead of it in the queue by then.
        let units = vec![
            unit(0, 0, None),
            unit(1, 0, Some(0)),
            unit(2, 0, None),
            unit(3, 0, None),
        ];
        let mut s = Scheduler::new(units, &[2]);
        assert_eq!(drain(&mut s), [0, 2]);
        s.finished(n(0));
        assert_eq!(drain(&mut s), [1]);
        s.finished(n(2));
        assert_eq!(drain(&mut s), [3]);
        // An arm whose predecessor already ended starts in its place in the queue.
        let mut s = Scheduler::new(vec![unit(0, 0, None), unit(1, 0, Some(0))], &[1]);
        assert_eq!(drain(&mut s), [0]);
        s.finished(n(0));
        assert_eq!(drain(&mut s), [1]);
    }

    #[test]
    fn a_deferred_episode_frees_its_slot_but_holds_its_follower_until_it_ends() {
        // 0 is held by another process: 2 takes its slot, 1 (its follower) waits.
        let units = vec![unit(0, 0, None), unit(1, 0, Some(0)), unit(2, 0, None)];
        let mut s = Scheduler::new(units, &[1]);
        assert_eq!(drain(&mut s), [0]);
        s.defer(n(0));
        assert_eq!(s.in_flight(), 0);
        assert_eq!(drain(&mut s), [2]);
        // The holder died: 0 runs here after all, before anything queued.
        s.finished(n(2));
        s.resume(n(0));
        assert_eq!(drain(&mut s), [0]);
        s.finished(n(0));
        assert_eq!(drain(&mut s), [1]);
        // Committed by its holder: finishing a deferred episode releases its follower.
        let mut s = Scheduler::new(vec![unit(0, 0, None), unit(1, 0, Some(0))], &[1]);
        assert_eq!(drain(&mut s), [0]);
        s.defer(n(0));
        assert_eq!(drain(&mut s), Vec::<u32>::new());
        s.finished(n(0));
        assert_eq!(drain(&mut s), [1]);
    }

    #[test]
    fn an_episode_that_cannot_start_releases_the_arm_after_it() {
        // The caller finishes an episode it took but could not run (its variant did
        // not compile): its slot is free again and its follower starts.
        let mut s = Scheduler::new(vec![unit(0, 0, None), unit(1, 0, Some(0))], &[4]);
        assert_eq!(drain(&mut s), [0]);
        assert_eq!(s.in_flight(), 1);
        s.finished(n(0));
        assert_eq!(s.in_flight(), 0);
        assert_eq!(drain(&mut s), [1]);
    }

    #[test]
    fn a_route_stops_after_its_threshold_of_infra_failures_in_a_row_and_only_it() {
        // Route 0 (one slot, threshold 2) fails, succeeds, then fails twice: stopped,
        // its last two episodes never start; route 1 (threshold 0) fails and goes on.
        let units = vec![
            unit(0, 0, None),
            unit(1, 0, None),
            unit(2, 0, None),
            unit(3, 0, None),
            unit(4, 0, None),
            unit(5, 0, Some(4)),
            unit(6, 1, None),
            unit(7, 1, None),
        ];
        let mut s = Scheduler::new(units, &[1, 1]).with_breakers(&[2, 0]);
        assert_eq!(drain(&mut s), [0, 6]);
        assert_eq!(s.ended(n(0), true), None);
        assert_eq!(s.ended(n(6), true), None, "a threshold of 0 never stops");
        assert_eq!(drain(&mut s), [1, 7]);
        assert_eq!(s.ended(n(1), false), None, "a success resets the count");
        assert_eq!(drain(&mut s), [2]);
        assert_eq!(s.ended(n(2), true), None);
        assert_eq!(drain(&mut s), [3]);
        assert_eq!(s.ended(n(3), true), Some((0, 2)));
        assert_eq!(drain(&mut s), Vec::<u32>::new(), "route 0 is stopped");
        assert_eq!(s.ended(n(7), true), None);
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.not_started(), [n(4), n(5)]);
    }

    #[test]
    fn breakers_are_per_route_the_command_line_first_then_the_catalogue() {
        let config = |name: &str, base_url: &str, extra: &str| {
            let c: Configuration = toml::from_str(&format!(
                "name = \"{name}\"\norganization = \"o\"\nprovider = \"openai\"\nmodel = \"m\"\n\
                 base_url = \"{base_url}\"\n\
                 prices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\n{extra}"
            ))
            .unwrap_or_else(|e| panic!("{e}"));
            c
        };
        let configs = [
            config("a", "http://127.0.0.1:1", "max_infra_failures = 3"),
            config("b", "http://127.0.0.1:2", ""),
            config("c", "http://127.0.0.1:1", "max_infra_failures = 9"),
        ];
        let default = tbb_provider::config::DEFAULT_MAX_INFRA_FAILURES;
        assert_eq!(breakers(&configs, None), [3, default]);
        assert_eq!(breakers(&configs, Some(0)), [0, 0]);
        assert_eq!(routes(&configs).1.len(), 2);
    }

    /// A shard-like filter: the episodes of one configuration, no tables.
    struct OneConfiguration(usize);

    impl Filter for OneConfiguration {
        fn executes(&self, dag: &Dag, execute: NodeIndex) -> bool {
            matches!(dag.graph[execute].work, Work::Execute { config, .. } if config == self.0)
        }

        fn publishes(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_filter_takes_its_episodes_with_their_grades_and_compiles_and_publishes_nothing() {
        let (study, _dir) = super::super::smoke_study();
        let cache = study.cache().unwrap_or_else(|e| panic!("{e}"));
        let plan = study.plan(&cache).unwrap_or_else(|e| panic!("{e}"));
        let dag = &study.dag;
        let everything = selected(dag, &plan, &Everything);
        assert_eq!(
            everything.len(),
            dag.graph.node_count(),
            "a fresh study runs it all"
        );
        let taken = selected(dag, &plan, &OneConfiguration(1));
        let of_kind = |kind: NodeKind| taken.iter().filter(|&&i| dag.graph[i].kind == kind).count();
        let executes = dag
            .nodes()
            .filter(|(_, n)| matches!(n.work, Work::Execute { config: 1, .. }))
            .count();
        let all_executes = dag
            .nodes()
            .filter(|(_, n)| n.kind == NodeKind::Execute)
            .count();
        assert!(
            executes > 0 && executes < all_executes,
            "{executes} of {all_executes}"
        );
        assert_eq!(of_kind(NodeKind::Execute), executes);
        assert_eq!(of_kind(NodeKind::Grade), executes);
        assert_eq!(of_kind(NodeKind::Analysis) + of_kind(NodeKind::Table), 0);
        for &i in &taken {
            match dag.graph[i].work {
                Work::Execute {
                    config, compile, ..
                } => {
                    assert_eq!(config, 1);
                    assert!(taken.contains(&compile), "its compile node comes with it");
                }
                Work::Grade { execute, .. } => assert!(taken.contains(&execute)),
                Work::Compile { .. } => assert!(dag
                    .graph
                    .neighbors(i)
                    .any(|e| taken.contains(&e) && dag.graph[e].kind == NodeKind::Execute)),
                _ => {}
            }
        }
    }

    #[test]
    fn routes_share_a_slot_count_set_by_their_first_configuration() {
        let config = |name: &str, base_url: Option<&str>, concurrency: u32| {
            let mut c: Configuration = toml::from_str(&format!(
                "name = \"{name}\"\norganization = \"o\"\nprovider = \"openai\"\nmodel = \"m\"\n\
                 prices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\nconcurrency = {concurrency}\n"
            ))
            .unwrap_or_else(|e| panic!("{e}"));
            c.base_url = base_url.map(str::to_string);
            c
        };
        let (of_config, slots) = routes(&[
            config("a", None, 3),
            config("b", Some("http://127.0.0.1:1"), 0),
            config("c", None, 9),
            config("d", Some("http://127.0.0.1:2"), 1000),
        ]);
        assert_eq!(of_config, [0, 1, 0, 2]);
        assert_eq!(slots, [3, 1, 256]);
    }
}
