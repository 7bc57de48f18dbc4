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
//! Never: runs, reads the cache or writes anything. Building the DAG reads nothing but
//! what it is given.

use std::collections::BTreeMap;
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;

use super::key::{hash_hex, KeyInput, KeyTemplate, NodeInput, NodeKind};
use crate::manifest::Manifest;
use tbb_analysis::{AnalysisKind, Input};
use tbb_core::compile::cell::{level_name, Cell};
use tbb_core::family::FamilySet;
use tbb_harness::Prompts;
use tbb_provider::config::ProviderKind;
use tbb_provider::Configuration;

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
        /// The `schedule` column: the order this condition's arms ran in.
        schedule: Arc<str>,
        /// This arm's place in `schedule` (from 1) when the arms run one after
        /// another.
        position: Option<u32>,
        /// The execute node that must finish before this one starts (the previous
        /// arm of an ordered schedule). Ordering only: it is not an input, its key is
        /// not in this node's key, and its failure does not fail this node.
        after: Option<NodeIndex>,
    },
    /// Grade one episode's transcript.
    Grade {
        /// Its execute node.
        execute: NodeIndex,
        /// Its compile node.
        compile: NodeIndex,
    },
    /// Run `manifest.analyses[index]`.
    Analysis {
        /// Index into [`Manifest::analyses`].
        index: usize,
    },
    /// Publish a table.
    Table(Publish),
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
    /// The tables of an analysis node.
    Analysis(NodeIndex),
}

/// One node.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its kind.
    pub kind: NodeKind,
    /// Readable identity, unique in the DAG.
    pub id: Arc<str>,
    /// The identity's fields, in order (shared by an episode's execute and grade
    /// nodes).
    pub fields: Arc<[(&'static str, String)]>,
    /// What its key is computed from.
    pub input: NodeInput,
    /// blake3 of the key input.
    pub key: Arc<str>,
    /// What running it means.
    pub work: Work,
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
    /// Table publication (columns, writer settings).
    pub const TABLE: &str = "table/1";
    /// `episodes.parquet`'s columns (2: `calls_by_controller`).
    pub const EPISODES: &str = "episodes/2";
    /// `variants.parquet`'s columns (2: `required_tool_kinds`, the discovery study's
    /// required-tool cluster).
    pub const VARIANTS: &str = "variants/2";
    /// `requests.parquet`: its columns and how its rows are read off transcripts
    /// (`tbb_tables::requests`).
    pub const REQUESTS: &str = "requests/2";
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
}

impl Dag {
    /// Builds the DAG of `manifest`.
    pub fn build(manifest: &Manifest, inputs: &Inputs<'_>) -> Dag {
        let mut dag = Dag {
            graph: DiGraph::new(),
            objects: BTreeMap::new(),
        };
        let provenance = |input: KeyInput| {
            input
                .file(
                    format!("manifest {}", short_name(&manifest.path)),
                    manifest.content_hash.clone(),
                )
                .file("lockfile", inputs.lockfile_hash.to_string())
        };

        // Compile nodes: one per (family, cell) some block runs, in the order first
        // needed.
        let mut compiles: BTreeMap<(usize, Cell), NodeIndex> = BTreeMap::new();
        let mut compile_order: Vec<NodeIndex> = Vec::new();
        let mut block_compiles: Vec<Vec<NodeIndex>> = Vec::new();
        for block in &manifest.blocks {
            let mut mine = Vec::new();
            for name in &block.families {
                let Some(family) = inputs
                    .families
                    .families
                    .iter()
                    .position(|f| &f.name == name)
                else {
                    continue;
                };
                for cell in &block.cells {
                    let node = match compiles.get(&(family, *cell)) {
                        Some(&n) => n,
                        None => {
                            let n = dag.add_compile(inputs.families, family, *cell);
                            compiles.insert((family, *cell), n);
                            compile_order.push(n);
                            n
                        }
                    };
                    mine.push(node);
                }
            }
            block_compiles.push(mine);
        }

        // Execute and grade nodes.
        let mut grades = Vec::new();
        let config_objects: Vec<String> = manifest
            .configurations
            .iter()
            .map(|c| dag.put_object(config_object(c)))
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
        for (bi, block) in manifest.blocks.iter().enumerate() {
            // Every condition of the block once per (configuration, repeat): its units
            // (arms at caps) in the repeat's schedule, with identity fields and key input
            // short of the variant; then one execute and one grade node per (variant,
            // unit).
            let mut conditions = Vec::new();
            for config_name in &block.configurations {
                let Some(ci) = manifest
                    .configurations
                    .iter()
                    .position(|c| &c.name == config_name)
                else {
                    continue;
                };
                let config = &manifest.configurations[ci];
                let version = execute_version(config);
                let units = block.units(&manifest.arms, config_name);
                for repeat in block.repeat_range() {
                    let order = block.order(units.len(), repeat);
                    let names: Vec<String> = order
                        .iter()
                        .map(|&k| block.unit_name(&manifest.arms, config_name, units[k]))
                        .collect();
                    let schedule: Arc<str> = names
                        .join(if block.schedule.is_ordered() {
                            ">"
                        } else {
                            "|"
                        })
                        .into();
                    let mut condition = Vec::new();
                    for (place, &k) in order.iter().enumerate() {
                        let unit = units[k];
                        let arm = &manifest.arms[unit.arm];
                        let system = (
                            format!(
                                "prompt {}",
                                short_name(&inputs.prompts_dir.join(arm.form.prompt.file_name()))
                            ),
                            hash_hex(inputs.prompts.system(arm.form.prompt).as_bytes()),
                        );
                        let mut suffix = Vec::new();
                        if several_blocks {
                            suffix.push(("block", block.name.clone()));
                        }
                        suffix.extend([
                            ("arm", arm.name.clone()),
                            ("cap", unit.cap.to_string()),
                            ("rep", repeat.to_string()),
                        ]);
                        let mut template = KeyInput::new(NodeKind::Execute, &version);
                        for (component, value) in arm.form.columns() {
                            template = template.param(component, value);
                        }
                        template = template
                            .param("completion_cap", unit.cap)
                            .param("episode_budget", manifest.budgets.episode_budget)
                            .param("repeat", repeat)
                            .file(system.0.clone(), system.1.clone())
                            .file(nudge.0.clone(), nudge.1.clone())
                            .object(
                                format!("configuration {}", config.name),
                                config_objects[ci].clone(),
                            );
                        // The order is part of an ordered design: changing it reruns.
                        let position = block.schedule.is_ordered().then_some(place as u32 + 1);
                        if let Some(p) = position {
                            template = template
                                .param("schedule", schedule.to_string())
                                .param("schedule_position", p);
                        }
                        condition.push((
                            config.name.clone(),
                            suffix,
                            Arc::new(KeyTemplate::new(template)),
                            (
                                ci,
                                bi,
                                unit.arm,
                                unit.cap,
                                repeat,
                                schedule.clone(),
                                position,
                            ),
                        ));
                    }
                    conditions.push(condition);
                }
            }
            for &compile in &block_compiles[bi] {
                let compile_fields = dag.graph[compile].fields.clone();
                let compile_key = dag.graph[compile].key.clone();
                for condition in &conditions {
                    let mut previous: Option<NodeIndex> = None;
                    for (config, suffix, template, unit) in condition {
                        let (config_index, block_index, arm, cap, repeat, schedule, position) =
                            unit.clone();
                        let mut fields = Vec::with_capacity(compile_fields.len() + 5);
                        fields.push(("cfg", config.clone()));
                        fields.extend(compile_fields.iter().cloned());
                        fields.extend(suffix.iter().cloned());
                        let input =
                            NodeInput::of(template, vec![("compile", compile_key.to_string())]);
                        let work = Work::Execute {
                            compile,
                            config: config_index,
                            block: block_index,
                            arm,
                            cap,
                            repeat,
                            schedule,
                            position,
                            after: previous.filter(|_| position.is_some()),
                        };
                        let fields: Arc<[(&'static str, String)]> = fields.into();
                        let execute =
                            dag.add(NodeKind::Execute, fields.clone(), input, work, &[compile]);
                        previous = Some(execute);
                        let input = NodeInput::of(
                            &grade_template,
                            vec![
                                ("execute", dag.graph[execute].key.to_string()),
                                ("compile", compile_key.to_string()),
                            ],
                        );
                        grades.push(dag.add(
                            NodeKind::Grade,
                            fields,
                            input,
                            Work::Grade { execute, compile },
                            &[execute, compile],
                        ));
                    }
                }
            }
        }

        // Tables of the compiled variants and the graded episodes.
        let all_compiles = compile_order;
        let variants_key = dag.keys_hash(&all_compiles);
        let input = provenance(KeyInput::new(NodeKind::Table, versions::VARIANTS))
            .input("variants", variants_key.clone());
        dag.add(
            NodeKind::Table,
            vec![("table", "variants".into())],
            input,
            Work::Table(Publish::Variants),
            &all_compiles,
        );
        // The rows also carry where each episode sits in the design (block, arm name,
        // schedule), which no episode key holds: the identities of the grade nodes
        // (which name them) enter too, so a renamed arm republishes the table and
        // reruns the analyses, and no episode.
        let episodes_key = {
            let mut bytes = dag.keys_hash(&grades).into_bytes();
            for &g in &grades {
                bytes.extend_from_slice(dag.graph[g].id.as_bytes());
                if let Work::Grade { execute, .. } = dag.graph[g].work {
                    if let Work::Execute { schedule, .. } = &dag.graph[execute].work {
                        bytes.extend_from_slice(schedule.as_bytes());
                    }
                }
                bytes.push(b'\n');
            }
            hash_hex(&bytes)
        };
        let input = provenance(KeyInput::new(NodeKind::Table, versions::EPISODES))
            .param("study", manifest.study.clone())
            .input("episodes", episodes_key.clone());
        dag.add(
            NodeKind::Table,
            vec![("table", "episodes".into())],
            input,
            Work::Table(Publish::Episodes),
            &grades,
        );
        // One row per request of the same episodes, with the same condition columns.
        let input = provenance(KeyInput::new(NodeKind::Table, versions::REQUESTS))
            .param("study", manifest.study.clone())
            .input("episodes", episodes_key.clone());
        let requests = dag.add(
            NodeKind::Table,
            vec![("table", "requests".into())],
            input,
            Work::Table(Publish::Requests),
            &grades,
        );

        // Analyses over the episodes: each reads what its kind declares — this study's
        // episodes, variants or requests, the tables of analyses before it, or another study's
        // table (by content hash: a changed upstream table reruns it).
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
                        input = input.input("episodes", episodes_key.clone());
                        reads.extend(&grades);
                    }
                    Input::Variants => {
                        input = input.input("variants", variants_key.clone());
                        reads.extend(&all_compiles);
                    }
                    // The requests table node's key: a new requests layout
                    // (`versions::REQUESTS`) or any changed episode reruns the analysis.
                    Input::Requests => {
                        input = input.input("requests", self_key(&dag, requests));
                        reads.push(requests);
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
                                input = input.input(table, self_key(&dag, *node));
                                reads.push(*node);
                            }
                        }
                    },
                    Input::EveryAnalysis => {
                        for (other, node, _) in &analyses {
                            input = input.input(other, self_key(&dag, *node));
                            reads.push(*node);
                        }
                    }
                }
            }
            reads.sort();
            reads.dedup();
            let node = dag.add(
                NodeKind::Analysis,
                vec![("analysis", name.clone())],
                input,
                Work::Analysis { index },
                &reads,
            );
            let input = provenance(KeyInput::new(NodeKind::Table, versions::TABLE))
                .input("analysis", dag.graph[node].key.to_string());
            dag.add(
                NodeKind::Table,
                vec![("table", name.clone())],
                input,
                Work::Table(Publish::Analysis(node)),
                &[node],
            );
            analyses.push((name, node, a.kind));
        }
        dag
    }

    /// The compile node of one family at one cell.
    fn add_compile(&mut self, families: &FamilySet, family: usize, cell: Cell) -> NodeIndex {
        let f = &families.families[family];
        let mut fields = vec![("family", f.name.clone())];
        fields.extend(cell_fields(&cell));
        let mut input = KeyInput::new(NodeKind::Compile, tbb_core::compile::CODE_VERSION).file(
            format!("family {}", f.name),
            tbb_core::family::hex(f.content_hash()),
        );
        for (k, v) in cell_fields(&cell) {
            input = input.param(k, v);
        }
        self.add(
            NodeKind::Compile,
            fields,
            input,
            Work::Compile { family, cell },
            &[],
        )
    }

    fn add(
        &mut self,
        kind: NodeKind,
        fields: impl Into<Arc<[(&'static str, String)]>>,
        input: impl Into<NodeInput>,
        work: Work,
        reads: &[NodeIndex],
    ) -> NodeIndex {
        let fields = fields.into();
        let id = identity(kind, &fields);
        let input = input.into();
        let key = input.key();
        let index = self.graph.add_node(Node {
            kind,
            id: id.into(),
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
        self.nodes().find(|(_, n)| &*n.id == id).map(|(i, _)| i)
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
                NodeKind::Analysis => "plum",
                NodeKind::Table => "lightgrey",
            };
            out.push_str(&format!(
                "  n{} [label={:?}, style=filled, fillcolor={colour}];\n",
                i.index(),
                n.id
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

/// `kind[field=value, ...]` (tables and analyses: `kind[value, ...]`). Written into
/// one buffer: the DAG makes tens of thousands.
pub fn identity(kind: NodeKind, fields: &[(&'static str, String)]) -> String {
    let named = !matches!(kind, NodeKind::Table | NodeKind::Analysis);
    let len: usize = fields.iter().map(|(k, v)| k.len() + v.len() + 3).sum();
    let mut id = String::with_capacity(kind.name().len() + 2 + len);
    id.push_str(kind.name());
    id.push('[');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            id.push_str(", ");
        }
        if named {
            id.push_str(k);
            id.push('=');
        }
        id.push_str(v);
    }
    id.push(']');
    id
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
            tbb_provider::sim::CODE_VERSION
        ),
        _ => tbb_harness::CODE_VERSION.to_string(),
    }
}
