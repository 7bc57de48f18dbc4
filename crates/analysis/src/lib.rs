//! Analyses as plug-ins: every kind of `[[analyses]]` table a manifest may hold, each
//! in its own file, and the registry ([`KINDS`]) that names the statistical ones.
//!
//! Owns: the [`Kind`] contract — a kind's name, typed parameters, declared inputs
//! ([`Input`]), design needs (checked on a [`Design`]), output tables and code
//! version — and the kinds, grouped by the study that runs them, each file named as
//! the manifest names its kind:
//!
//! * [`capacity`]: the paper's capacity analysis (`contrasts`, `truncation`, `strata`,
//!   `lanes`, `costs`, `configurations`, `interaction_anatomy`, `first_responses`) and the decoders of failure records
//!   (`decoders`);
//! * [`cap`]: the completion-cap studies — the configuration strata
//!   (`truncation_strata`, `sweep_strata`, `crossover_strata`) and the sweep and the
//!   crossover (`cap_sweep`, `cap_crossover`), with the libraries only they use;
//! * [`repair`]: the repairs study with its sentinel repeats and the structural
//!   holdout of the public-handoff controller (`repairs`, `sentinel`, `holdout`), and
//!   the repair-versus-switch comparison (`switches`), with their `repair_stats`;
//! * a study with a single kind is that kind's file at the top: the discovery study's
//!   availability and R contrast ([`discovery`]), the depth frontier with its limits
//!   ([`frontier`]) and the policy pilot ([`pilot`]);
//! * a kind any study may run is its file at the top too: pass^k and run-to-run
//!   disagreement over a study's repeats ([`repeats`]);
//! * the played ToolSandbox scenarios' kind is its file at the top: the paired
//!   distraction-tool contrasts with their category and level breakdowns
//!   ([`toolsandbox`]), the only kind that reads [`Input::ScenarioEpisodes`].
//!
//! The libraries several studies share — the capacity design, the needs a kind checks
//! and the statistics — are in [`common`]; no other top-level module is a library.
//!
//! Adding a kind is one file implementing [`Typed`], in its study's folder, and one
//! line in [`KINDS`]; the manifest, the DAG, the cache and the plan read everything
//! else from the trait.
//!
//! Invariants: an analysis is a pure function of its parameters and the inputs it is
//! given (episode and request rows in any order: every analysis sorts or groups before
//! it computes), so the same inputs and seed give the same table byte for byte.
//! Randomness is ChaCha seeded from the analysis's `seed` parameter only.
//!
//! Never: runs episodes, reads the clock, a manifest or the file system, or renders
//! the report; the pipeline hands it rows, tables and a [`Design`] and writes what it
//! returns. The crate graph enforces it: this crate depends on the tables crate only.

pub mod cap;
pub mod capacity;
pub mod common;
pub mod discovery;
pub mod frontier;
pub mod pilot;
pub mod repair;
pub mod repeats;
pub mod toolsandbox;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use arrow_array::RecordBatch;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

pub use common::needs::{BlockShape, Design, Names};
pub use common::stats::{Bootstrap, ClusterUnit};

use tbb_tables::rows::{EpisodeRow, RequestRow};
use tbb_tables::{StoreError, TableRow};

/// Every statistical kind, in report order. Registering a kind is one line here (the
/// engine's registry adds the report, which renders these kinds' tables, after them).
pub static KINDS: &[&dyn Kind] = &[
    &capacity::contrasts::Contrasts,
    &capacity::truncation::Truncation,
    &capacity::strata::Strata,
    &capacity::lanes::Lanes,
    &capacity::costs::Costs,
    &capacity::configurations::Configurations,
    &capacity::interaction_anatomy::InteractionAnatomy,
    &capacity::first_responses::FirstResponses,
    &cap::truncation_strata::TruncationStrata,
    &cap::sweep_strata::SweepStrata,
    &cap::crossover_strata::CrossoverStrata,
    &cap::cap_sweep::CapSweep,
    &cap::cap_crossover::CapCrossover,
    &discovery::Discovery,
    &repair::repairs::Repairs,
    &repair::sentinel::Sentinel,
    &repeats::Repeats,
    &repair::switches::Switches,
    &frontier::Frontier,
    &repair::holdout::Holdout,
    &capacity::decoders::Decoders,
    &pilot::Pilot,
    &toolsandbox::Toolsandbox,
];

/// A table an analysis reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// This study's graded episodes.
    Episodes,
    /// This study's compiled variants (the `variants` table).
    Variants,
    /// This study's provider requests (the rows of `requests.parquet`, one per request
    /// of every graded episode).
    Requests,
    /// A table another analysis writes: by default this study's (an analysis listed
    /// before it must write it), or another study's, bound in the manifest with
    /// `inputs = { <table> = { from = "<study>" } }`.
    Table(&'static str),
    /// Every table of the analyses listed before it (the report).
    EveryAnalysis,
    /// This study's played ToolSandbox scenarios (the rows of
    /// `toolsandbox_episodes.parquet`, [`tbb_tables::ScenarioEpisodeRow`]), handed over
    /// in [`Context::tables`] under that table's name.
    ScenarioEpisodes,
}

/// One parameter problem, at its path inside the analysis's table (`draws`,
/// `cluster_units.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamProblem {
    /// The parameter's path, relative to the `[[analyses]]` table.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
}

/// What a kind is given to run.
pub struct Context<'a> {
    /// The study's name.
    pub study: &'a str,
    /// This study's graded episodes (empty unless it declares [`Input::Episodes`]).
    pub episodes: &'a [EpisodeRow],
    /// This study's request rows (none unless it declares [`Input::Requests`]), read a
    /// pass at a time.
    pub requests: &'a dyn Requests,
    /// The tables it declared, by table name (`variants`, another analysis's tables,
    /// another study's table).
    pub tables: &'a BTreeMap<String, RecordBatch>,
    /// The analyses of this study its design cannot run, with why (the report notes
    /// them).
    pub skipped: &'a [(&'a str, String)],
}

/// This study's request rows as an analysis reads them: in passes, each in the order of
/// `requests.parquet`, never handed over all at once (a large study's requests are many
/// times its episodes, and the pipeline reads them back from disk a part at a time).
pub trait Requests {
    /// Calls `each` with every row, in the table's order.
    fn for_each(&self, each: &mut dyn FnMut(&RequestRow)) -> Result<(), AnalysisError>;
}

/// No request rows: the [`Context::requests`] of an analysis that does not read them.
pub static NO_REQUESTS: [RequestRow; 0] = [];

impl Requests for [RequestRow] {
    fn for_each(&self, each: &mut dyn FnMut(&RequestRow)) -> Result<(), AnalysisError> {
        self.iter().for_each(each);
        Ok(())
    }
}

impl<const N: usize> Requests for [RequestRow; N] {
    fn for_each(&self, each: &mut dyn FnMut(&RequestRow)) -> Result<(), AnalysisError> {
        self.as_slice().for_each(each)
    }
}

impl Requests for Vec<RequestRow> {
    fn for_each(&self, each: &mut dyn FnMut(&RequestRow)) -> Result<(), AnalysisError> {
        self.as_slice().for_each(each)
    }
}

/// What an analysis produced.
#[derive(Debug, Clone, Default)]
pub struct Produced {
    /// Tables, written as `outputs/<study>/<table>.parquet`.
    pub tables: Vec<Output>,
    /// Text files, written as `outputs/<study>/<name>`.
    pub files: Vec<(String, String)>,
    /// Episodes (`transcript_ref`) whose pages the files link to: the pipeline, which
    /// reads transcripts, writes each as `outputs/<study>/episodes/<key prefix>.html`
    /// ([`crate::show::page_name`]) beside them.
    pub episodes: Vec<String>,
}

impl From<Vec<Output>> for Produced {
    fn from(tables: Vec<Output>) -> Produced {
        Produced {
            tables,
            files: Vec::new(),
            episodes: Vec::new(),
        }
    }
}

/// The object-safe contract of a kind, as the registry holds it. Implement
/// [`Typed`] instead: every [`Typed`] kind is a [`Kind`].
pub trait Kind: Sync {
    /// The name written in manifests (`kind = "contrasts"`).
    fn name(&self) -> &'static str;
    /// Version of its computation, part of its node's key: bump it whenever a change
    /// changes its tables.
    fn code_version(&self) -> &'static str;
    /// The names of its parameters (for "did you mean").
    fn parameters(&self) -> &'static [&'static str];
    /// Checks the parameters given (nulls dropped) and returns them normalised.
    fn parse(&self, given: &Map<String, Value>) -> Result<Map<String, Value>, Vec<ParamProblem>>;
    /// The tables it reads.
    fn inputs(&self) -> &'static [Input];
    /// The tables it writes.
    fn outputs(&self) -> &'static [&'static str];
    /// Why it cannot run on `design` with these (parsed) parameters, or `None` when it
    /// can.
    fn needs(&self, params: &Map<String, Value>, design: &Design) -> Option<String>;
    /// The names in these (parsed) parameters that the study cannot resolve
    /// ([`Typed::check_names`]).
    fn check_names(&self, params: &Map<String, Value>, names: &Names<'_>) -> Vec<ParamProblem>;
    /// The units each of its comparisons uses on `design` ([`Typed::units`]).
    fn units(&self, params: &Map<String, Value>, design: &Design) -> Vec<String>;
    /// Why it would fail on the other studies' tables it reads (all of them given, by
    /// table name) with this study's `configurations`, before anything runs; `None`
    /// when it would not (or cannot tell).
    fn preflight(
        &self,
        params: &Map<String, Value>,
        upstream: &BTreeMap<String, RecordBatch>,
        configurations: &BTreeSet<String>,
    ) -> Option<String>;
    /// Runs it.
    fn run(
        &self,
        params: &Map<String, Value>,
        input: &Context<'_>,
    ) -> Result<Produced, AnalysisError>;
}

/// A kind with typed parameters: what one analysis file implements.
pub trait Typed: Sync + 'static {
    /// Its parameters: a serde struct (`#[serde(deny_unknown_fields)]`) deserialised
    /// from its `[[analyses]]` table, `kind` and `inputs` aside.
    type Params: Serialize + DeserializeOwned;
    /// The name written in manifests.
    const NAME: &'static str;
    /// Version of its computation.
    const VERSION: &'static str;
    /// The tables it reads.
    const INPUTS: &'static [Input] = &[Input::Episodes];
    /// The tables it writes.
    const OUTPUTS: &'static [&'static str];
    /// Range checks serde cannot express, each at its parameter's path.
    fn check(_params: &Self::Params) -> Vec<ParamProblem> {
        Vec::new()
    }
    /// Why it cannot run on `design`, or `None` when it can.
    fn needs(_design: &Design) -> Option<String> {
        None
    }
    /// Why its parameters do not fit `design` (a configuration of the catalogue that
    /// the study does not run, say), or `None`: the analysis is then skipped.
    fn needs_with(_params: &Self::Params, _design: &Design) -> Option<String> {
        None
    }
    /// The names its parameters give (arms, configurations, cells, lanes, caps) that
    /// cannot be what the user meant, each at its parameter's path with "did you mean":
    /// errors of the manifest, found when it loads, before any episode runs.
    fn check_names(_params: &Self::Params, _names: &Names<'_>) -> Vec<ParamProblem> {
        Vec::new()
    }
    /// One line per comparison it makes, saying which units it uses (`tbb plan`
    /// prints them, so a filter that matches more cells than meant shows before the
    /// run).
    fn units(_params: &Self::Params, _design: &Design) -> Vec<String> {
        Vec::new()
    }
    /// Why it would fail on the other studies' tables it reads, given this study's
    /// configurations: `plan` shows it and `apply` refuses before running anything.
    fn preflight(
        _params: &Self::Params,
        _upstream: &BTreeMap<String, RecordBatch>,
        _configurations: &BTreeSet<String>,
    ) -> Option<String> {
        None
    }
    /// Runs it.
    fn run(params: &Self::Params, input: &Context<'_>) -> Result<Produced, AnalysisError>;
}

impl<T: Typed> Kind for T {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn code_version(&self) -> &'static str {
        T::VERSION
    }
    fn parameters(&self) -> &'static [&'static str] {
        tbb_diag::fields::field_names::<T::Params>()
    }
    fn parse(&self, given: &Map<String, Value>) -> Result<Map<String, Value>, Vec<ParamProblem>> {
        let value = Value::Object(given.clone());
        let params: T::Params = serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = dotted(e.path());
            vec![ParamProblem {
                message: format!(
                    "`{path}` of the {} analysis is invalid: {}",
                    T::NAME,
                    e.inner()
                ),
                path,
                help: None,
            }]
        })?;
        let problems = T::check(&params);
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(normalise(&params))
    }
    fn inputs(&self) -> &'static [Input] {
        T::INPUTS
    }
    fn outputs(&self) -> &'static [&'static str] {
        T::OUTPUTS
    }
    fn needs(&self, params: &Map<String, Value>, design: &Design) -> Option<String> {
        T::needs(design).or_else(|| {
            let params: T::Params = serde_json::from_value(Value::Object(params.clone())).ok()?;
            T::needs_with(&params, design)
        })
    }
    fn check_names(&self, params: &Map<String, Value>, names: &Names<'_>) -> Vec<ParamProblem> {
        serde_json::from_value::<T::Params>(Value::Object(params.clone()))
            .map(|p| T::check_names(&p, names))
            .unwrap_or_default()
    }
    fn units(&self, params: &Map<String, Value>, design: &Design) -> Vec<String> {
        serde_json::from_value::<T::Params>(Value::Object(params.clone()))
            .map(|p| T::units(&p, design))
            .unwrap_or_default()
    }
    fn preflight(
        &self,
        params: &Map<String, Value>,
        upstream: &BTreeMap<String, RecordBatch>,
        configurations: &BTreeSet<String>,
    ) -> Option<String> {
        let params: T::Params = serde_json::from_value(Value::Object(params.clone())).ok()?;
        T::preflight(&params, upstream, configurations)
    }
    fn run(
        &self,
        params: &Map<String, Value>,
        input: &Context<'_>,
    ) -> Result<Produced, AnalysisError> {
        let params: T::Params =
            serde_json::from_value(Value::Object(params.clone())).map_err(|e| {
                AnalysisError::InvalidParameter {
                    analysis: T::NAME,
                    detail: e.to_string(),
                }
            })?;
        T::run(&params, input)
    }
}

/// A serde path as the manifest's dotted paths write it (`cluster_units.1`).
fn dotted(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut parts = Vec::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => parts.push(index.to_string()),
            Segment::Map { key } => parts.push(key.clone()),
            Segment::Enum { variant } => parts.push(variant.clone()),
            Segment::Unknown => break,
        }
    }
    parts.join(".")
}

/// Parameters as stored in the manifest (and its hash): serialised from the typed
/// struct, nulls (defaults) dropped.
fn normalise<P: Serialize>(params: &P) -> Map<String, Value> {
    match serde_json::to_value(params) {
        Ok(Value::Object(map)) => map.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        _ => Map::new(),
    }
}

/// A kind with no parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A registered kind: a copyable handle on its [`Kind`], compared and ordered by name.
#[derive(Clone, Copy)]
pub struct AnalysisKind(&'static dyn Kind);

impl AnalysisKind {
    /// A handle on `kind` (the engine's registry wraps every kind it lists).
    pub const fn new(kind: &'static dyn Kind) -> AnalysisKind {
        AnalysisKind(kind)
    }

    /// The statistical kind registered in [`KINDS`] under `name` (the engine's
    /// registry also knows the report).
    pub fn get(name: &str) -> Option<AnalysisKind> {
        KINDS
            .iter()
            .find(|k| k.name() == name)
            .map(|k| AnalysisKind(*k))
    }

    /// Every statistical kind of [`KINDS`], in report order.
    pub fn all() -> impl Iterator<Item = AnalysisKind> + Clone {
        KINDS.iter().map(|k| AnalysisKind(*k))
    }

    /// The name written in manifests.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// Its [`Kind`].
    pub fn kind(self) -> &'static dyn Kind {
        self.0
    }

    /// The table names it reads from another analysis or study.
    pub fn table_inputs(self) -> impl Iterator<Item = &'static str> {
        self.0.inputs().iter().filter_map(|i| match i {
            Input::Table(t) => Some(*t),
            _ => None,
        })
    }
}

impl PartialEq for AnalysisKind {
    fn eq(&self, other: &AnalysisKind) -> bool {
        self.name() == other.name()
    }
}
impl Eq for AnalysisKind {}
impl PartialOrd for AnalysisKind {
    fn partial_cmp(&self, other: &AnalysisKind) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for AnalysisKind {
    fn cmp(&self, other: &AnalysisKind) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}
impl std::hash::Hash for AnalysisKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}
impl fmt::Debug for AnalysisKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnalysisKind({})", self.name())
    }
}
impl Serialize for AnalysisKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One `[[analyses]]` entry, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// Which.
    pub kind: AnalysisKind,
    /// Its parameters, checked against the kind's typed parameters and normalised
    /// (defaults left out).
    pub params: Map<String, Value>,
    /// Tables read from another study: table name -> study name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
}

impl Analysis {
    /// Its parameters, typed.
    pub fn params<P: DeserializeOwned>(&self) -> Result<P, AnalysisError> {
        serde_json::from_value(Value::Object(self.params.clone())).map_err(|e| {
            AnalysisError::InvalidParameter {
                analysis: self.kind.name(),
                detail: e.to_string(),
            }
        })
    }

    /// The study a table input is read from (`None`: this study).
    pub fn from_study(&self, table: &str) -> Option<&str> {
        self.inputs.get(table).map(String::as_str)
    }
}

/// One table an analysis produced, written as `outputs/<study>/<table>.parquet`.
#[derive(Debug, Clone)]
pub struct Output {
    /// Table name (file stem), e.g. `contrasts`.
    pub table: &'static str,
    /// Its rows.
    pub batch: RecordBatch,
}

impl Output {
    /// The table of `rows`, named by their row struct.
    pub fn of<R: TableRow>(rows: &[R]) -> Result<Output, StoreError> {
        Ok(Output {
            table: R::TABLE,
            batch: R::to_batch(rows)?,
        })
    }
}

/// Why an analysis could not be computed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AnalysisError {
    /// Building a table failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] StoreError),
    /// The episodes lack what the analysis needs (e.g. a cell of the capacity design).
    #[error("the {analysis} analysis cannot run: {detail}")]
    #[diagnostic(
        code(tbb::analysis::missing_data),
        help("run the capacity cells it needs (`[cells] preset = \"capacity\"`) or drop the analysis from the manifest")
    )]
    MissingData {
        /// Which analysis.
        analysis: &'static str,
        /// What is missing.
        detail: String,
    },
    /// The episodes contradict each other (two rows for one condition, a family in
    /// two intents, a configuration in two organizations).
    #[error("the {analysis} analysis cannot run: {detail}")]
    #[diagnostic(
        code(tbb::analysis::inconsistent),
        help("the episodes table should hold one row per scored condition; rerun the study or report a bug")
    )]
    Inconsistent {
        /// Which analysis.
        analysis: &'static str,
        /// The contradiction.
        detail: String,
    },
    /// A parameter of the analysis in the manifest is out of range.
    #[error("the {analysis} analysis has an invalid parameter: {detail}")]
    #[diagnostic(code(tbb::analysis::invalid_parameter))]
    InvalidParameter {
        /// Which analysis.
        analysis: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A kind defined outside this crate failed with its own diagnostic (the report
    /// kind, when the tables cannot be rendered): kept whole, code and help included.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Foreign(ForeignDiagnostic),
    /// The request rows could not be read back (the pipeline keeps them on disk while
    /// the analyses run).
    #[error("the request rows cannot be read back: {detail}")]
    #[diagnostic(
        code(tbb::analysis::requests_unread),
        help("check the disk under the study's outputs folder, then apply again")
    )]
    RequestsUnread {
        /// What failed.
        detail: String,
    },
    /// A table it reads is not what it expects (a column missing or of another type).
    #[error("the {analysis} analysis cannot read the `{table}` table: {detail}")]
    #[diagnostic(
        code(tbb::analysis::input_table),
        help("re-apply the study that writes the table with this version of tbb")
    )]
    InputTable {
        /// Which analysis.
        analysis: &'static str,
        /// The table.
        table: String,
        /// What is wrong.
        detail: String,
    },
}

/// The rows of table `R` among an analysis's input tables: an [`AnalysisError::InputTable`]
/// naming `analysis` when it was not given or does not read as `R`.
pub(crate) fn input_rows<R: TableRow>(
    analysis: &'static str,
    tables: &BTreeMap<String, RecordBatch>,
) -> Result<Vec<R>, AnalysisError> {
    let bad = |detail: String| AnalysisError::InputTable {
        analysis,
        table: R::TABLE.into(),
        detail,
    };
    let batch = tables
        .get(R::TABLE)
        .ok_or_else(|| bad("it was not given".into()))?;
    R::from_batch(batch).map_err(|e| bad(e.to_string()))
}

/// A diagnostic of another crate's kind carried by [`AnalysisError::Foreign`]: its
/// message, code, help and labels are the inner diagnostic's.
#[derive(Debug)]
pub struct ForeignDiagnostic(pub Box<dyn miette::Diagnostic + Send + Sync + 'static>);

impl fmt::Display for ForeignDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for ForeignDiagnostic {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl miette::Diagnostic for ForeignDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.0.severity()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.help()
    }
    fn url<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.url()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.0.source_code()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.0.labels()
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        self.0.related()
    }
    fn diagnostic_source(&self) -> Option<&dyn miette::Diagnostic> {
        self.0.diagnostic_source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_unique_and_field_names_come_from_the_struct() {
        let names: BTreeSet<&str> = KINDS.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), KINDS.len());
        assert_eq!(
            AnalysisKind::get("contrasts").map(|k| k.kind().parameters()),
            Some(&["draws", "seed", "cluster_units"][..])
        );
        assert_eq!(
            AnalysisKind::get("costs").map(|k| k.kind().parameters().len()),
            Some(0)
        );
    }

    #[test]
    fn parameters_are_typed_and_normalised() {
        let Some(kind) = AnalysisKind::get("contrasts") else {
            panic!("contrasts is registered")
        };
        let given: Map<String, Value> =
            serde_json::from_str(r#"{"draws": 5, "cluster_units": ["family"]}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        let parsed = kind
            .kind()
            .parse(&given)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            Value::Object(parsed),
            serde_json::json!({"draws": 5, "cluster_units": ["family"]})
        );
        let bad: Map<String, Value> =
            serde_json::from_str(r#"{"draws": "many"}"#).unwrap_or_else(|e| panic!("{e}"));
        let problems = kind.kind().parse(&bad).err().unwrap_or_default();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "draws");
        let zero: Map<String, Value> =
            serde_json::from_str(r#"{"draws": 0}"#).unwrap_or_else(|e| panic!("{e}"));
        let problems = kind.kind().parse(&zero).err().unwrap_or_default();
        assert_eq!(problems[0].path, "draws");
        assert!(problems[0].message.contains("positive"), "{problems:?}");
    }
}
