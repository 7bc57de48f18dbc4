//! The DAG a manifest becomes: compile, execute, grade, analysis and table nodes, each
//! with a readable identity and a content key ([`super::key`]).
//!
//! Identity is what a node *is* (`execute[cfg=sim-x, family=f, v=128, w=high, d=raw,
//! r=low, arm=routed, cap=1024, rep=0]`, with `block=…` first when the manifest has
//! several blocks); the key is what it was computed *from*: the arm enters it as its
//! canonical form (one parameter per component), never by name. The cache is indexed by both: a node whose identity is known under another
//! key reruns, and the two key inputs say why.
//!
//! Node order is deterministic (the manifest's order: blocks, then families, cells,
//! configurations, arms, caps, repeats) and topological: every node comes after its
//! inputs, and an ordered schedule's arm after the arm it waits for.
//!
//! Building: the manifest is first resolved to units of work (per block, the variants
//! it compiles and its conditions, each an ordered list of arms at caps), then one
//! function per node kind adds its nodes and their keys. Owns too the one mapping from
//! an execute node to the episode it runs ([`ExecuteSpec`]).
//!
//! Never: runs, reads the cache or writes anything. Building the DAG reads nothing but
//! what it is given.

use std::collections::BTreeMap;
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;

use super::identity::{identity, Field, Fields, Part};
use super::key::{hash_hex, KeyInput, KeyTemplate, NodeInput, NodeKind};
use crate::manifest::Manifest;
use tbb_analysis::{AnalysisKind, Input};
use tbb_core::compile::cell::{level_name, Cell};
use tbb_core::compile::Variant;
use tbb_core::family::FamilySet;
use tbb_harness::{ArmForm, EpisodeSpec, Prompts};
use tbb_provider::config::ProviderKind;
use tbb_provider::Configuration;
use tbb_tables::{Name, TableRow};

/// What running a node means.
#[derive(Debug, Clone)]
pub enum Work {
    /// Compile `families[family]` at `cell`.
    Compile {
        /// Index into [`FamilySet::families`].
        family: usize,
        /// The cell.
        cell: Cell,
    },
    /// Run one episode.
    Execute {
        /// The compile node of its variant.
        compile: NodeIndex,
        /// Index into [`Manifest::configurations`].
        config: usize,
        /// Index into [`Manifest::blocks`].
        block: usize,
        /// Index into [`Manifest::arms`].
        arm: usize,
        /// Completion cap.
        cap: u32,
        /// Repeat index.
        repeat: u32,
        /// The `schedule` column: the order this condition's arms ran in (a shared name:
        /// one pointer, not `Arc<str>`'s two, in every execute node).
        schedule: Name,
        /// This arm's place in `schedule` (from 1) when the arms run one after
        /// another.
        position: Option<u32>,
        /// The execute node that must finish before this one starts (the previous
        /// arm of an ordered schedule). Ordering only: it is not an input, its key is
        /// not in this node's key, and its failure does not fail this node.
        after: Option<NodeIndex>,
        /// The attempt this episode runs: 1, or more once `--retry-infra` reran it
        /// ([`super::retry`]); above 1 it is part of the node's key.
        attempt: u32,
    },
    /// Grade one episode's transcript.
    Grade {
        /// Its execute node.
        execute: NodeIndex,
        /// Its compile node.
        compile: NodeIndex,
    },
    /// Play one ToolSandbox scenario.
    Scenario {
        /// Index into the manifest's `toolsandbox.scenarios`.
        scenario: usize,
        /// Index into [`Manifest::configurations`].
        config: usize,
        /// Completion cap.
        cap: u32,
        /// Repeat index.
        repeat: u32,
    },
    /// Grade one played scenario from its saved world.
    ScenarioGrade {
        /// Its scenario node.
        run: NodeIndex,
    },
    /// Run `manifest.analyses[index]`.
    Analysis {
        /// Index into [`Manifest::analyses`].
        index: usize,
    },
    /// Publish a table.
    Table(Publish),
}

/// What an execute node runs, by value: the one mapping from the DAG's work item to an
/// [`EpisodeSpec`], shared by apply (live), regrading and certification (replayed).
/// The variant and configuration stay the caller's: apply shares them with the
/// episode's task, certification borrows them.
#[derive(Debug, Clone, Copy)]
pub struct ExecuteSpec {
    /// Index into [`Manifest::configurations`].
    pub config: usize,
    /// The arm's components.
    pub arm: ArmForm,
    /// Completion cap.
    pub completion_cap: u32,
    /// Episode budget in reported tokens.
    pub episode_budget: u64,
    /// Repeat index.
    pub repeat: u32,
}

impl ExecuteSpec {
    /// The episode of `work` in `manifest`; `None` when it is not an execute node or
    /// names an arm or configuration the manifest lacks.
    pub fn of(manifest: &Manifest, work: &Work) -> Option<ExecuteSpec> {
        let Work::Execute {
            config,
            arm,
            cap,
            repeat,
            ..
        } = *work
        else {
            return None;
        };
        manifest.configurations.get(config)?;
        Some(ExecuteSpec {
            config,
            arm: manifest.arms.get(arm)?.form,
            completion_cap: cap,
            episode_budget: manifest.budgets.episode_budget,
            repeat,
        })
    }

    /// The episode of `variant` under `config` (the one [`ExecuteSpec::config`] names)
    /// in `study` (the manifest's study name).
    pub fn spec<'a>(
        &self,
        variant: &'a Variant,
        config: &'a Configuration,
        study: &'a str,
    ) -> EpisodeSpec<'a> {
        EpisodeSpec {
            variant,
            config,
            arm: self.arm,
            completion_cap: self.completion_cap,
            episode_budget: self.episode_budget,
            repeat: self.repeat,
            study: Some(study),
        }
    }
}

/// What a table node publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publish {
    /// `variants.parquet`, from every compile node.
    Variants,
    /// `episodes.parquet`, from every grade node.
    Episodes,
    /// `requests.parquet`, from every grade node (and the transcript of its execute
    /// node).
    Requests,
    /// `toolsandbox_episodes.parquet`, from every scenario grade node.
    ScenarioEpisodes,
    /// `toolsandbox_requests.parquet`, from every scenario grade node and the transcripts
    /// of its scenario node.
    ScenarioRequests,
    /// The tables of an analysis node.
    Analysis(NodeIndex),
}

/// One node.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its kind.
    pub kind: NodeKind,
    /// The identity's fields, in order (their parts shared by an episode's execute
    /// and grade nodes, and with the other episodes of its variant, configuration and
    /// unit).
    pub fields: Fields,
    /// What its key is computed from ([`Dag::key_input`] has it in full).
    input: HeldInput,
    /// blake3 of the key input.
    pub key: Arc<str>,
    /// What running it means.
    pub work: Work,
}

/// How a node holds what its key is computed from. An episode's execute and grade
/// nodes are two of every three nodes of a study: holding each one's upstream keys in
/// a list of its own cost 96 bytes an episode (7 MB of the capacity study at 4
/// repeats), when the DAG already has them, so those nodes name only their template
/// and read the keys from their upstream nodes when asked.
#[derive(Debug, Clone)]
enum HeldInput {
    /// Its own key input: compile, scenario, analysis and table nodes, and an episode
    /// whose attempt enters its key.
    Own(Box<NodeInput>),
    /// `template` reading the key of `compile` (an execute node).
    Compile {
        template: Arc<KeyTemplate>,
        compile: NodeIndex,
    },
    /// `template` reading the keys of `execute` and `compile` (a grade node).
    ExecuteAndCompile {
        template: Arc<KeyTemplate>,
        execute: NodeIndex,
        compile: NodeIndex,
    },
}

impl HeldInput {
    /// The key input in full, the upstream keys read from `graph`: the one mapping from
    /// what a node holds to its key input, which its key is computed from when the node
    /// is added and which [`Dag::key_input`] gives when asked.
    fn resolve(&self, graph: &DiGraph<Node, ()>) -> NodeInput {
        let key = |i: NodeIndex| graph[i].key.clone();
        match self {
            HeldInput::Own(input) => (**input).clone(),
            HeldInput::Compile { template, compile } => {
                NodeInput::of(template, vec![("compile", key(*compile))])
            }
            HeldInput::ExecuteAndCompile {
                template,
                execute,
                compile,
            } => NodeInput::of(
                template,
                vec![("execute", key(*execute)), ("compile", key(*compile))],
            ),
        }
    }
}

impl Node {
    /// Its readable identity, unique in the DAG, made from its kind and fields when
    /// asked for: held in every node, the DAG's identity and key strings were 8.1 MB
    /// of a cached plan of the capacity study (36,745 nodes), the identities about two
    /// thirds of it, and they grow with every episode.
    pub fn id(&self) -> String {
        identity(self.kind, &self.fields)
    }
}

/// The DAG of a manifest.
#[derive(Debug)]
pub struct Dag {
    /// Nodes in topological order; edges run from an input to the node reading it.
    pub graph: DiGraph<Node, ()>,
    /// Objects the key inputs refer to, by hash.
    pub objects: BTreeMap<String, Value>,
}

/// Code versions: bump the one of a stage whenever its results would change.
pub mod versions {
    /// Table publication (columns, writer settings). Every table's version moved once
    /// when published row groups went from 65,536 rows to 16,384
    /// (`tbb_tables::PUBLISHED_ROW_GROUP_SIZE`): a table of more rows has other bytes.
    pub const TABLE: &str = "table/2";
    /// `episodes.parquet`'s columns (2: `calls_by_controller`; 3: `episode_key`;
    /// 4: `quantization`, `reasoning_effort`; 5: row groups of 16,384 rows).
    pub const EPISODES: &str = "episodes/5";
    /// `variants.parquet`'s columns (2: `required_tool_kinds`, the discovery study's
    /// required-tool cluster; 3: row groups of 16,384 rows).
    pub const VARIANTS: &str = "variants/3";
    /// `requests.parquet`'s columns (3: the execute node's key is `transcript_ref`, as
    /// in `episodes.parquet`, no longer `node_key`; 4: row groups of 16,384 rows).
    pub const REQUESTS: &str = "requests/4";
    /// The request rows the analyses read: how they are read off transcripts
    /// (`tbb_tables::requests`). Apart from [`REQUESTS`] since the published columns
    /// and the rows can change alone: renaming a column republishes the table and
    /// reruns no analysis. (It was the table's version until `requests/3`, so the
    /// analyses' keys did not change when the two parted.)
    pub const REQUEST_ROWS: &str = "requests/2";
    /// `toolsandbox_episodes.parquet`'s columns (2: the live user's configuration,
    /// requests, tokens and cost; 3: row groups of 16,384 rows).
    pub const SCENARIO_EPISODES: &str = "toolsandbox_episodes/3";
    /// `toolsandbox_requests.parquet`'s columns (2: row groups of 16,384 rows).
    pub const SCENARIO_REQUESTS: &str = "toolsandbox_requests/2";
    /// What an analysis node records (its tables as Parquet files in the cache),
    /// appended to the kind's own code version.
    pub const ANALYSIS: &str = "analysis/2";
}

/// A node's key.
fn self_key(dag: &Dag, node: NodeIndex) -> String {
    dag.graph[node].key.to_string()
}

/// An analysis parameter as it enters the key: a list of names as one
/// comma-separated string (`family,intent`), anything else as it is.
fn key_value(v: &Value) -> Value {
    match v.as_array() {
        Some(items) if items.iter().all(Value::is_string) => Value::String(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => v.clone(),
    }
}

/// What the DAG is built from besides the manifest.
pub struct Inputs<'a> {
    /// The families the manifest names.
    pub families: &'a FamilySet,
    /// The system prompts.
    pub prompts: &'a Prompts,
    /// The prompts' directory, for readable names.
    pub prompts_dir: &'a std::path::Path,
    /// blake3 of the lockfile the run would write.
    pub lockfile_hash: &'a str,
    /// Tables the analyses read from other studies, with their hashes.
    pub upstream: &'a [super::upstream::Pin],
    /// The attempt due for each execute node retried by `--retry-infra`, by its key at
    /// its first attempt ([`super::retry::attempts`]).
    pub attempts: &'a std::collections::HashMap<String, u32>,
}

/// A manifest resolved to its units of work, before any node or key: per block, the
/// variants it compiles and its conditions (cargo's unit graph, before the build plan).
struct Resolved {
    blocks: Vec<ResolvedBlock>,
}

/// One block's work.
struct ResolvedBlock {
    /// `(family index, cell)` in the block's order: families, then cells.
    compiles: Vec<(usize, Cell)>,
    /// Its conditions: configurations, then repeats.
    conditions: Vec<Condition>,
}

/// The arms of one configuration in one repeat, which every variant of the block runs.
struct Condition {
    /// Index into [`Manifest::configurations`].
    config: usize,
    repeat: u32,
    /// The `schedule` column.
    schedule: Name,
    /// Its episodes in the order they run.
    units: Vec<ExecuteUnit>,
}

/// One episode of a condition: an arm at a cap, at a place in the schedule.
struct ExecuteUnit {
    /// Index into [`Manifest::arms`].
    arm: usize,
    cap: u32,
    /// Its place in an ordered schedule (from 1).
    position: Option<u32>,
}

/// Resolves `manifest` against the families: names the manifest gives that the
/// families lack are left out (the manifest's check refuses them first).
fn resolve(manifest: &Manifest, families: &FamilySet) -> Resolved {
    let blocks = manifest
        .blocks
        .iter()
        .map(|block| {
            let compiles = block
                .families
                .iter()
                .filter_map(|name| families.families.iter().position(|f| &f.name == name))
                .flat_map(|family| block.cells.iter().map(move |cell| (family, *cell)))
                .collect();
            let mut conditions = Vec::new();
            for config_name in &block.configurations {
                let Some(config) = manifest
                    .configurations
                    .iter()
                    .position(|c| &c.name == config_name)
                else {
                    continue;
                };
                let units = block.units(&manifest.arms, config_name);
                for repeat in block.repeat_range() {
                    let order = block.order(units.len(), repeat);
                    let names: Vec<String> = order
                        .iter()
                        .map(|&k| block.unit_name(&manifest.arms, config_name, units[k]))
                        .collect();
                    let ordered = block.schedule.is_ordered();
                    let schedule = Name::new(&names.join(if ordered { ">" } else { "|" }));
                    let units = order
                        .iter()
                        .enumerate()
                        .map(|(place, &k)| ExecuteUnit {
                            arm: units[k].arm,
                            cap: units[k].cap,
                            position: ordered.then_some(place as u32 + 1),
                        })
                        .collect();
                    conditions.push(Condition {
                        config,
                        repeat,
                        schedule,
                        units,
                    });
                }
            }
            ResolvedBlock {
                compiles,
                conditions,
            }
        })
        .collect();
    Resolved { blocks }
}

/// A unit's identity fields after the variant's, and its key input short of the
/// variant: made once per block and shared by every variant.
type KeyedUnit = (Part, Arc<KeyTemplate>);

/// What the tables' nodes give the analyses that read them.
struct Tables {
    variants_key: String,
    episodes_key: String,
    /// The episodes table's node (none when the study plays no family). It stands for
    /// the episodes as a whole: a node that reads every episode takes one edge from it,
    /// not one from each grade node (an edge from each grade node to each of the
    /// capacity study's eleven analyses and its requests table: 870,912 of its
    /// 1,161,671 edges, 14 MB, at 72,576 episodes). Edges order the nodes; keys say what
    /// a node depends on, and they are unchanged.
    episodes: Option<NodeIndex>,
    /// The requests table's node (none when the study plays no family).
    requests: Option<NodeIndex>,
    /// The key of the request rows as the analyses read them ([`versions::REQUEST_ROWS`]).
    request_rows_key: String,
    /// The key of the ToolSandbox rows (when the study plays scenarios).
    scenario_episodes_key: String,
}

/// A table's key input with the study's provenance (its manifest and lockfile).
fn provenance(manifest: &Manifest, inputs: &Inputs<'_>, input: KeyInput) -> KeyInput {
    input
        .file(
            format!("manifest {}", short_name(&manifest.path)),
            manifest.content_hash.clone(),
        )
        .file("lockfile", inputs.lockfile_hash.to_string())
}

impl Dag {
    /// The grade node of execute node `execute`, or of scenario node `execute` (the one
    /// node it feeds).
    pub fn grade_of(&self, execute: NodeIndex) -> Option<NodeIndex> {
        self.graph.neighbors(execute).find(|&g| {
            matches!(
                self.graph[g].kind,
                NodeKind::Grade | NodeKind::ScenarioGrade
            )
        })
    }

    /// The scenario grade node of scenario node `run` (the one node it feeds).
    pub fn scenario_grade_of(&self, run: NodeIndex) -> Option<NodeIndex> {
        self.graph
            .neighbors(run)
            .find(|&g| self.graph[g].kind == NodeKind::ScenarioGrade)
    }

    /// A DAG of no nodes.
    pub fn empty() -> Dag {
        Dag {
            graph: DiGraph::new(),
            objects: BTreeMap::new(),
        }
    }

    /// What `node`'s key is computed from.
    pub fn key_input(&self, node: NodeIndex) -> NodeInput {
        self.graph[node].input.resolve(&self.graph)
    }

    /// Builds the DAG of `manifest`: resolves it to units of work, then adds the nodes
    /// of each kind in turn (compile, execute and grade, tables, analyses).
    pub fn build(manifest: &Manifest, inputs: &Inputs<'_>) -> Dag {
        let mut dag = Dag::empty();
        let resolved = resolve(manifest, inputs.families);
        // Room for every node at once: a node list grown by doubling held up to twice
        // the nodes of a large study, most of it never used.
        let episodes: usize = resolved
            .blocks
            .iter()
            .map(|b| b.compiles.len() * b.conditions.iter().map(|c| c.units.len()).sum::<usize>())
            .sum();
        let compiles_at_most: usize = resolved.blocks.iter().map(|b| b.compiles.len()).sum();
        // Five tables, and per analysis a node and its table.
        let finals = 5 + 2 * manifest.analyses.len();
        let scenarios = manifest.scenario_episode_count() as usize;
        dag.graph
            .reserve_exact_nodes(compiles_at_most + 2 * episodes + 2 * scenarios + finals);
        let (compiles, block_compiles) = dag.add_compiles(inputs.families, &resolved);
        let grades = dag.add_episodes(manifest, inputs, &resolved, &block_compiles);
        let scenario_grades = dag.add_scenarios(manifest, inputs);
        let tables = dag.add_tables(manifest, inputs, &compiles, &grades, &scenario_grades);
        dag.add_analyses(
            manifest,
            inputs,
            &tables,
            &compiles,
            &grades,
            &scenario_grades,
        );
        // Each analysis reading the episodes has an edge from every grade node: the
        // edge list grew by doubling to up to twice what it holds (17 MB at 72,576
        // episodes), and is kept as long as the DAG.
        dag.graph.shrink_to_fit_edges();
        dag
    }

    /// Compile nodes: one per (family, cell) some block runs, in the order first needed.
    /// Returns them all, and each block's (one per pair it lists).
    fn add_compiles(
        &mut self,
        families: &FamilySet,
        resolved: &Resolved,
    ) -> (Vec<NodeIndex>, Vec<Vec<NodeIndex>>) {
        let mut known: BTreeMap<(usize, Cell), NodeIndex> = BTreeMap::new();
        let mut order = Vec::new();
        let per_block = resolved
            .blocks
            .iter()
            .map(|block| {
                block
                    .compiles
                    .iter()
                    .map(|&(family, cell)| {
                        *known.entry((family, cell)).or_insert_with(|| {
                            let n = self.add_compile(families, family, cell);
                            order.push(n);
                            n
                        })
                    })
                    .collect()
            })
            .collect();
        (order, per_block)
    }

    /// Execute and grade nodes: for each block, each of its variants runs each of its
    /// conditions, arm after arm; returns the grade nodes in order.
    fn add_episodes(
        &mut self,
        manifest: &Manifest,
        inputs: &Inputs<'_>,
        resolved: &Resolved,
        block_compiles: &[Vec<NodeIndex>],
    ) -> Vec<NodeIndex> {
        let mut grades = Vec::new();
        let config_fields: Vec<Part> = manifest
            .configurations
            .iter()
            .map(|c| Arc::new(vec![("cfg", Arc::from(c.name.as_str()))]))
            .collect();
        let config_objects: Vec<String> = manifest
            .configurations
            .iter()
            .map(|c| self.put_object(config_object(c)))
            .collect();
        let nudge = (
            format!(
                "prompt {}",
                short_name(&inputs.prompts_dir.join("nudge.txt"))
            ),
            hash_hex(inputs.prompts.nudge.as_bytes()),
        );
        let grade_template = Arc::new(KeyTemplate::new(
            KeyInput::new(NodeKind::Grade, tbb_core::grade::CODE_VERSION)
                .param("episode_budget", manifest.budgets.episode_budget),
        ));
        let several_blocks = manifest.blocks.len() > 1;
        for (bi, (block, resolved)) in manifest.blocks.iter().zip(&resolved.blocks).enumerate() {
            // Each unit's identity fields and key input short of the variant, made once
            // and shared by every variant of the block.
            let keyed: Vec<Vec<KeyedUnit>> = resolved
                .conditions
                .iter()
                .map(|condition| {
                    let config = &manifest.configurations[condition.config];
                    let version = execute_version(config);
                    condition
                        .units
                        .iter()
                        .map(|unit| {
                            let arm = &manifest.arms[unit.arm];
                            let system = (
                                format!(
                                    "prompt {}",
                                    short_name(
                                        &inputs.prompts_dir.join(arm.form.prompt.file_name())
                                    )
                                ),
                                hash_hex(inputs.prompts.system(arm.form.prompt).as_bytes()),
                            );
                            let mut suffix: Vec<Field> = Vec::new();
                            if several_blocks {
                                suffix.push(("block", block.name.as_str().into()));
                            }
                            suffix.extend([
                                ("arm", arm.name.as_str().into()),
                                ("cap", unit.cap.to_string().into()),
                                ("rep", condition.repeat.to_string().into()),
                            ]);
                            let mut template = KeyInput::new(NodeKind::Execute, &version);
                            for (component, value) in arm.form.columns() {
                                template = template.param(component, value);
                            }
                            template = template
                                .param("completion_cap", unit.cap)
                                .param("episode_budget", manifest.budgets.episode_budget)
                                .param("repeat", condition.repeat)
                                // Each study draws its own episodes (the episode's seed
                                // holds the study too): none is shared with another.
                                .param("study", manifest.study.as_str())
                                .file(system.0, system.1)
                                .file(nudge.0.clone(), nudge.1.clone())
                                .object(
                                    format!("configuration {}", config.name),
                                    config_objects[condition.config].clone(),
                                );
                            // The order is part of an ordered design: changing it reruns.
                            if let Some(p) = unit.position {
                                template = template
                                    .param("schedule", condition.schedule.to_string())
                                    .param("schedule_position", p);
                            }
                            (Arc::new(suffix), Arc::new(KeyTemplate::new(template)))
                        })
                        .collect()
                })
                .collect();
            for &compile in &block_compiles[bi] {
                let compile_fields = self.graph[compile].fields.to_part();
                for (condition, keyed) in resolved.conditions.iter().zip(&keyed) {
                    let mut previous: Option<NodeIndex> = None;
                    for (unit, (suffix, template)) in condition.units.iter().zip(keyed) {
                        let fields = Fields::joined(
                            &config_fields[condition.config],
                            &compile_fields,
                            suffix,
                        );
                        let held = HeldInput::Compile {
                            template: template.clone(),
                            compile,
                        };
                        let input = held.resolve(&self.graph);
                        let key = input.key();
                        // A retried episode's attempt enters its key, and only then:
                        // every other node keeps the key it always had.
                        let retried = if inputs.attempts.is_empty() {
                            None
                        } else {
                            inputs.attempts.get(&key).filter(|&&n| n > 1)
                        };
                        let (input, key, attempt) = match retried {
                            Some(&n) => {
                                let input = NodeInput::from(input.full().param("attempt", n));
                                let key = input.key();
                                (HeldInput::Own(Box::new(input)), key, n)
                            }
                            None => (held, key, 1),
                        };
                        let work = Work::Execute {
                            compile,
                            config: condition.config,
                            block: bi,
                            arm: unit.arm,
                            cap: unit.cap,
                            repeat: condition.repeat,
                            schedule: condition.schedule.clone(),
                            position: unit.position,
                            after: previous.filter(|_| unit.position.is_some()),
                            attempt,
                        };
                        let execute = self.add_held(
                            NodeKind::Execute,
                            fields.clone(),
                            input,
                            key,
                            work,
                            &[compile],
                        );
                        previous = Some(execute);
                        let input = HeldInput::ExecuteAndCompile {
                            template: grade_template.clone(),
                            execute,
                            compile,
                        };
                        let key = input.resolve(&self.graph).key();
                        grades.push(self.add_held(
                            NodeKind::Grade,
                            fields,
                            input,
                            key,
                            Work::Grade { execute, compile },
                            &[execute, compile],
                        ));
                    }
                }
            }
        }
        grades
    }

    /// Tables of the compiled variants and the graded episodes, and of their requests.
    fn add_tables(
        &mut self,
        manifest: &Manifest,
        inputs: &Inputs<'_>,
        compiles: &[NodeIndex],
        grades: &[NodeIndex],
        scenario_grades: &[NodeIndex],
    ) -> Tables {
        let variants_key = self.keys_hash(compiles);
        // The rows also carry where each episode sits in the design (block, arm name,
        // schedule), which no episode key holds: the identities of the grade nodes
        // (which name them) enter too, so a renamed arm republishes the table and
        // reruns the analyses, and no episode.
        let episodes_key = {
            let mut bytes = self.keys_hash(grades).into_bytes();
            for &g in grades {
                bytes.extend_from_slice(self.graph[g].id().as_bytes());
                if let Work::Grade { execute, .. } = self.graph[g].work {
                    if let Work::Execute { schedule, .. } = &self.graph[execute].work {
                        bytes.extend_from_slice(schedule.as_bytes());
                    }
                }
                bytes.push(b'\n');
            }
            hash_hex(&bytes)
        };
        // A study that plays only ToolSandbox scenarios has no variant, episode or
        // request of tbb's own families: it publishes none of their (empty) tables.
        let published = (!manifest.families.is_empty()).then(|| {
            let input = provenance(
                manifest,
                inputs,
                KeyInput::new(NodeKind::Table, versions::VARIANTS),
            )
            .input("variants", variants_key.clone());
            self.add(
                NodeKind::Table,
                Fields::of(vec![("table", "variants".into())]),
                input,
                Work::Table(Publish::Variants),
                compiles,
            );
            // A row per episode, then a row per request of the same episodes with the
            // same condition columns: both keyed by the episodes.
            let rows = ("episodes", episodes_key.as_str());
            let episodes = self.add_rows_table(
                manifest,
                inputs,
                (versions::EPISODES, "episodes", Publish::Episodes),
                rows,
                grades,
            );
            let requests = self.add_rows_table(
                manifest,
                inputs,
                (versions::REQUESTS, "requests", Publish::Requests),
                rows,
                &[episodes],
            );
            (episodes, requests)
        });
        // What an analysis reading the requests depends on: the rows, not the columns
        // they are published under.
        let request_rows_key = provenance(
            manifest,
            inputs,
            KeyInput::new(NodeKind::Table, versions::REQUEST_ROWS),
        )
        .param("study", manifest.study.clone())
        .input("episodes", episodes_key.clone())
        .key();
        let scenario_episodes_key = self.add_scenario_table(manifest, inputs, scenario_grades);
        Tables {
            variants_key,
            episodes_key,
            episodes: published.map(|(episodes, _)| episodes),
            requests: published.map(|(_, requests)| requests),
            request_rows_key,
            scenario_episodes_key,
        }
    }

    /// Analyses over the episodes, each with the table node publishing its tables: each
    /// reads what its kind declares — this study's episodes, variants or requests, the
    /// tables of analyses before it, or another study's table (by content hash: a
    /// changed upstream table reruns it).
    fn add_analyses(
        &mut self,
        manifest: &Manifest,
        inputs: &Inputs<'_>,
        tables: &Tables,
        compiles: &[NodeIndex],
        grades: &[NodeIndex],
        scenario_grades: &[NodeIndex],
    ) {
        let mut analyses: Vec<(String, NodeIndex, AnalysisKind)> = Vec::new();
        // An analysis the design cannot feed gets no node: it would fail only after
        // every episode was paid for (`tbb plan` and `manifest check` say why).
        let skipped: Vec<AnalysisKind> = manifest
            .skipped_analyses()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for (index, a) in manifest.analyses.iter().enumerate() {
            if skipped.contains(&a.kind) {
                continue;
            }
            let name = a.kind.name().to_string();
            let version = format!("{}+{}", a.kind.kind().code_version(), versions::ANALYSIS);
            let mut input = KeyInput::new(NodeKind::Analysis, &version);
            for (k, v) in &a.params {
                input = input.param(k, key_value(v));
            }
            let mut reads: Vec<NodeIndex> = Vec::new();
            for declared in a.kind.kind().inputs() {
                match *declared {
                    Input::Episodes => {
                        input = input.input("episodes", tables.episodes_key.clone());
                        match tables.episodes {
                            Some(table) => reads.push(table),
                            None => reads.extend(grades),
                        }
                    }
                    Input::Variants => {
                        input = input.input("variants", tables.variants_key.clone());
                        reads.extend(compiles);
                    }
                    // The request rows' key: a new way of reading them
                    // (`versions::REQUEST_ROWS`) or any changed episode reruns the
                    // analysis; the table's node still comes first.
                    Input::Requests => {
                        input = input.input("requests", tables.request_rows_key.clone());
                        reads.extend(tables.requests);
                    }
                    Input::Table(table) => match a.from_study(table) {
                        Some(study) => {
                            let hash = inputs
                                .upstream
                                .iter()
                                .find(|p| p.study == study && p.table == table)
                                .and_then(|p| p.blake3.clone())
                                .unwrap_or_else(|| "missing".into());
                            input = input.file(format!("table {study}/{table}"), hash);
                        }
                        None => {
                            let writer = analyses
                                .iter()
                                .rev()
                                .find(|(_, _, k)| k.kind().outputs().contains(&table));
                            if let Some((_, node, _)) = writer {
                                input = input.input(table, self_key(self, *node));
                                reads.push(*node);
                            }
                        }
                    },
                    Input::ScenarioEpisodes => {
                        input = input.input(
                            tbb_tables::ScenarioEpisodeRow::TABLE,
                            tables.scenario_episodes_key.clone(),
                        );
                        reads.extend(scenario_grades);
                    }
                    Input::EveryAnalysis => {
                        for (other, node, _) in &analyses {
                            input = input.input(other, self_key(self, *node));
                            reads.push(*node);
                        }
                    }
                }
            }
            reads.sort();
            reads.dedup();
            let node = self.add(
                NodeKind::Analysis,
                Fields::of(vec![("analysis", name.as_str().into())]),
                input,
                Work::Analysis { index },
                &reads,
            );
            let input = provenance(
                manifest,
                inputs,
                KeyInput::new(NodeKind::Table, versions::TABLE),
            )
            .input("analysis", self.graph[node].key.to_string());
            self.add(
                NodeKind::Table,
                Fields::of(vec![("table", name.as_str().into())]),
                input,
                Work::Table(Publish::Analysis(node)),
                &[node],
            );
            analyses.push((name, node, a.kind));
        }
    }

    /// Scenario and scenario-grade nodes: every ToolSandbox scenario of the manifest under
    /// every condition ([`Manifest::scenario_conditions`]), scenario by scenario; returns
    /// the grade nodes in order.
    fn add_scenarios(&mut self, manifest: &Manifest, inputs: &Inputs<'_>) -> Vec<NodeIndex> {
        let Some(part) = &manifest.toolsandbox else {
            return Vec::new();
        };
        let conditions = manifest.scenario_conditions();
        let data = (
            "toolsandbox scenarios".to_string(),
            tbb_toolsandbox::data::VendoredFile::Scenarios
                .pin()
                .to_string(),
        );
        let nudge = (
            format!(
                "prompt {}",
                short_name(&inputs.prompts_dir.join("nudge.txt"))
            ),
            hash_hex(inputs.prompts.nudge.as_bytes()),
        );
        let config_objects: Vec<String> = manifest
            .configurations
            .iter()
            .map(|c| self.put_object(config_object(c)))
            .collect();
        let user_object = part
            .user
            .as_ref()
            .map(|u| (u.name.clone(), self.put_object(config_object(u))));
        let grade_template = Arc::new(KeyTemplate::new(KeyInput::new(
            NodeKind::ScenarioGrade,
            tbb_toolsandbox::evaluation::CODE_VERSION,
        )));
        let mut grades = Vec::new();
        for (index, name) in part.scenarios.iter().enumerate() {
            for c in &conditions {
                let config = &manifest.configurations[c.config];
                let fields = Fields::of(vec![
                    ("cfg", config.name.as_str().into()),
                    ("scenario", name.as_str().into()),
                    ("cap", c.cap.to_string().into()),
                    ("rep", c.repeat.to_string().into()),
                ]);
                let input = KeyInput::new(
                    NodeKind::Scenario,
                    &tbb_harness::scenario::code_version(config),
                )
                .param("scenario", name.as_str())
                .param("completion_cap", c.cap)
                .param("episode_budget", manifest.budgets.episode_budget)
                .param("repeat", c.repeat)
                .param("study", manifest.study.as_str())
                .file(data.0.clone(), data.1.clone())
                .file(nudge.0.clone(), nudge.1.clone())
                .object(
                    format!("configuration {}", config.name),
                    config_objects[c.config].clone(),
                );
                // A live user enters the key; the scripted user is the loop's own code.
                let input = match &user_object {
                    Some((name, hash)) => input.object(format!("user {name}"), hash.clone()),
                    None => input,
                };
                let work = Work::Scenario {
                    scenario: index,
                    config: c.config,
                    cap: c.cap,
                    repeat: c.repeat,
                };
                let run = self.add(NodeKind::Scenario, fields.clone(), input, work, &[]);
                let input = NodeInput::of(
                    &grade_template,
                    vec![("scenario", self.graph[run].key.clone())],
                );
                grades.push(self.add(
                    NodeKind::ScenarioGrade,
                    fields,
                    input,
                    Work::ScenarioGrade { run },
                    &[run],
                ));
            }
        }
        grades
    }

    /// The nodes of `toolsandbox_episodes.parquet` and `toolsandbox_requests.parquet`,
    /// when the study plays scenarios; returns the rows' key (what the analyses reading
    /// them depend on).
    fn add_scenario_table(
        &mut self,
        manifest: &Manifest,
        inputs: &Inputs<'_>,
        scenario_grades: &[NodeIndex],
    ) -> String {
        let key = self.keys_hash(scenario_grades);
        if manifest.toolsandbox.is_none() {
            return key;
        }
        // Both tables are made from the same rows (the requests read off the
        // transcripts those rows name).
        let tables = [
            (
                versions::SCENARIO_EPISODES,
                tbb_tables::ScenarioEpisodeRow::TABLE,
                Publish::ScenarioEpisodes,
            ),
            (
                versions::SCENARIO_REQUESTS,
                tbb_tables::scenarios::ScenarioRequestRow::TABLE,
                Publish::ScenarioRequests,
            ),
        ];
        for table in tables {
            self.add_rows_table(
                manifest,
                inputs,
                table,
                ("toolsandbox_episodes", &key),
                scenario_grades,
            );
        }
        key
    }

    /// A table of the study's rows: `(version, name, publish)` keyed by the study, its
    /// provenance and `rows` (the role and key of the rows it is made from), after
    /// `reads`.
    fn add_rows_table(
        &mut self,
        manifest: &Manifest,
        inputs: &Inputs<'_>,
        (version, table, publish): (&str, &str, Publish),
        (role, rows_key): (&str, &str),
        reads: &[NodeIndex],
    ) -> NodeIndex {
        let input = provenance(manifest, inputs, KeyInput::new(NodeKind::Table, version))
            .param("study", manifest.study.clone())
            .input(role, rows_key.to_string());
        self.add(
            NodeKind::Table,
            Fields::of(vec![("table", table.into())]),
            input,
            Work::Table(publish),
            reads,
        )
    }

    /// The compile node of one family at one cell.
    fn add_compile(&mut self, families: &FamilySet, family: usize, cell: Cell) -> NodeIndex {
        let f = &families.families[family];
        let mut fields: Vec<Field> = vec![("family", f.name.as_str().into())];
        fields.extend(cell_fields(&cell).into_iter().map(|(k, v)| (k, v.into())));
        let mut input = KeyInput::new(NodeKind::Compile, tbb_core::compile::CODE_VERSION).file(
            format!("family {}", f.name),
            tbb_core::family::hex(f.content_hash()),
        );
        for (k, v) in cell_fields(&cell) {
            input = input.param(k, v);
        }
        self.add(
            NodeKind::Compile,
            Fields::of(fields),
            input,
            Work::Compile { family, cell },
            &[],
        )
    }

    fn add(
        &mut self,
        kind: NodeKind,
        fields: Fields,
        input: impl Into<NodeInput>,
        work: Work,
        reads: &[NodeIndex],
    ) -> NodeIndex {
        let input = input.into();
        let key = input.key();
        self.add_held(
            kind,
            fields,
            HeldInput::Own(Box::new(input)),
            key,
            work,
            reads,
        )
    }

    /// Adds a node whose key, `key`, was computed from `input`.
    fn add_held(
        &mut self,
        kind: NodeKind,
        fields: Fields,
        input: HeldInput,
        key: String,
        work: Work,
        reads: &[NodeIndex],
    ) -> NodeIndex {
        let index = self.graph.add_node(Node {
            kind,
            fields,
            input,
            key: key.into(),
            work,
        });
        for &r in reads {
            self.graph.add_edge(r, index, ());
        }
        index
    }

    fn put_object(&mut self, value: Value) -> String {
        let hash = hash_hex(value.to_string().as_bytes());
        self.objects.insert(hash.clone(), value);
        hash
    }

    fn keys_hash(&self, nodes: &[NodeIndex]) -> String {
        // One buffer, hashed at once (see `plan::fingerprint`).
        let mut bytes = Vec::with_capacity(nodes.len() * 65);
        for &n in nodes {
            bytes.extend_from_slice(self.graph[n].key.as_bytes());
            bytes.push(b'\n');
        }
        hash_hex(&bytes)
    }

    /// The node with this identity (a scan: only `tbb explain` asks, once).
    pub fn find(&self, id: &str) -> Option<NodeIndex> {
        self.nodes().find(|(_, n)| n.id() == id).map(|(i, _)| i)
    }

    /// Every node, in topological order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeIndex, &Node)> {
        self.graph.node_indices().map(move |i| (i, &self.graph[i]))
    }

    /// The DAG in Graphviz DOT, nodes labelled by identity and coloured by kind.
    pub fn dot(&self) -> String {
        let mut out =
            String::from("digraph tbb {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n");
        for (i, n) in self.nodes() {
            let colour = match n.kind {
                NodeKind::Compile => "lightblue",
                NodeKind::Execute => "khaki",
                NodeKind::Grade => "palegreen",
                NodeKind::Scenario => "wheat",
                NodeKind::ScenarioGrade => "lightgreen",
                NodeKind::Analysis => "plum",
                NodeKind::Table => "lightgrey",
            };
            out.push_str(&format!(
                "  n{} [label={:?}, style=filled, fillcolor={colour}];\n",
                i.index(),
                n.id()
            ));
        }
        for e in self.graph.raw_edges() {
            out.push_str(&format!(
                "  n{} -> n{};\n",
                e.source().index(),
                e.target().index()
            ));
        }
        out.push_str("}\n");
        out
    }
}

/// A file's name as keys and reasons show it: its directory's name and its own
/// (`prompts/base.txt`), however the directory was spelled on the command line, so that
/// `--prompts ./prompts` and `--prompts /abs/prompts` give the same keys.
pub fn short_name(path: &std::path::Path) -> String {
    let mut parts: Vec<String> = path
        .components()
        .rev()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    parts.reverse();
    parts.join("/")
}

/// The fields of a cell in identities and parameters.
fn cell_fields(cell: &Cell) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        ("v", cell.v.to_string()),
        ("w", level_name(&cell.w)),
        ("d", level_name(&cell.d)),
        ("r", level_name(&cell.r)),
    ];
    if let Some(depth) = cell.depth {
        fields.push(("depth", depth.to_string()));
    }
    fields
}

/// A configuration as it enters execute keys: its [`Configuration::identity`].
pub fn config_object(config: &Configuration) -> Value {
    serde_json::to_value(config.identity()).unwrap_or(Value::Null)
}

/// The code version of an execute node: the harness's, and the simulator's for a
/// simulated configuration (its behaviour is code, not data).
fn execute_version(config: &Configuration) -> String {
    match config.provider {
        ProviderKind::Sim => format!(
            "{}+{}",
            tbb_harness::CODE_VERSION,
            tbb_agent::sim::CODE_VERSION
        ),
        _ => tbb_harness::CODE_VERSION.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smoke study loaded from the repository, and its DAG built again with the
    /// first execute node on its second attempt.
    fn smoke_with_a_retry() -> (crate::pipeline::Study, Dag) {
        let (study, _dir) = crate::pipeline::smoke_study();
        let first = study
            .dag
            .nodes()
            .find(|(_, n)| n.kind == NodeKind::Execute)
            .map(|(_, n)| n.key.to_string())
            .unwrap_or_else(|| panic!("the smoke study has no episode"));
        let attempts = std::collections::HashMap::from([(first, 2)]);
        let retried = Dag::build(
            &study.manifest,
            &Inputs {
                families: &study.families,
                prompts: &study.prompts,
                prompts_dir: &study.paths.prompts,
                lockfile_hash: &study.lockfile_hash,
                upstream: &[],
                attempts: &attempts,
            },
        );
        (study, retried)
    }

    /// Every node's key is the key of the input [`Dag::key_input`] gives, whether the
    /// node holds its input or reads its upstream keys when asked (every execute and
    /// grade node but a retried one, whose attempt enters its own input).
    #[test]
    fn every_node_s_key_is_the_key_of_its_key_input() {
        let (study, retried) = smoke_with_a_retry();
        for dag in [&study.dag, &retried] {
            let mut read = 0;
            for (i, node) in dag.nodes() {
                let input = dag.key_input(i);
                assert_eq!(input.key(), *node.key, "{}", node.id());
                assert_eq!(input.full().key(), *node.key, "{}", node.id());
                if !matches!(node.input, HeldInput::Own(_)) {
                    read += 1;
                }
            }
            let episodes = dag
                .nodes()
                .filter(|(_, n)| n.kind == NodeKind::Grade)
                .count();
            assert!(episodes > 0);
            let expected = if std::ptr::eq(dag, &retried) {
                2 * episodes - 1
            } else {
                2 * episodes
            };
            assert_eq!(read, expected);
        }
        let retried_nodes = retried
            .nodes()
            .filter(|&(i, _)| retried.key_input(i).full().params.contains_key("attempt"))
            .count();
        assert_eq!(retried_nodes, 1);
    }
}
