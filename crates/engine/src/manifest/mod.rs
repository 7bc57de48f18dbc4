//! Manifests: what a study runs, as a TOML file researchers edit
//! (`manifests/capacity.toml`).
//!
//! Owns: the manifest schema, layered loading (the file, then `TBB_*` environment
//! variables, then `--set key=value`), validation against the families and the
//! configuration catalogue, and the manifest's content hash.
//!
//! Stages: [`raw::RawManifest`] (serde, loose types, after layering) -> [`Manifest`]
//! (validated and resolved). The file is parsed with `toml` for byte spans
//! ([`raw::SpanIndex`]); figment only layers ([`layers`]).
//!
//! Invariants: loading is all-or-nothing — every problem is collected and reported at
//! once ([`ManifestError::Invalid`]), each at the span of the value in the file, or
//! naming the override it came from. Unknown keys and misspelled names are errors with
//! "did you mean", and so is a `TBB_*` environment variable tbb does not read (a typo in
//! one would otherwise be a silently ignored override). The content hash covers the
//! resolved manifest as canonical JSON (not the file's bytes, comments or layout, and
//! not its path).
//!
//! Never: plans, runs or writes anything. Reading the manifest and its catalogue is the
//! only I/O.

mod design;
pub use design::design_of_parts;
pub mod error;
pub mod layers;
pub mod raw;
mod resolve;
pub mod toolsandbox;

use std::path::{Path, PathBuf};

use serde::Serialize;
use tbb_diag::input::{read_text, MAX_SOURCE_BYTES};
use tbb_diag::source::SourceFile;

pub use error::{ManifestError, Problem, MAX_SHOWN};

use tbb_diag::spans::SpanIndex;

use tbb_core::compile::cell::Cell;
use tbb_core::family::FamilySet;
use tbb_harness::{Arm, ArmForm, Menu};
use tbb_provider::config::Catalogue;
use tbb_provider::Configuration;

/// Calls above the certified minimum every variant allows (fixed by the compiler).
pub const CALL_SLACK: u32 = 2;

/// Budgets of every episode of the study (the caps are each block's: [`Block`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Budgets {
    /// Tokens per episode.
    pub episode_budget: u64,
    /// Calls allowed above the certified minimum.
    pub call_slack: u32,
}

pub use tbb_analysis::{Analysis, AnalysisKind, ClusterUnit};

/// A validated, resolved manifest.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// The study's name.
    pub study: String,
    /// The manifest file (not part of the hash).
    #[serde(skip)]
    pub path: PathBuf,
    /// The configuration catalogue it read: its `catalogue`, relative to the
    /// manifest's directory, by default `configurations.toml` there (not part of the
    /// hash: the configurations it gave are).
    #[serde(skip)]
    pub catalogue: PathBuf,
    /// blake3 (hex) of the canonical JSON of everything below.
    #[serde(skip)]
    pub content_hash: String,
    /// Selected family names, in [`FamilySet`] order.
    pub families: Vec<String>,
    /// Cells, normalized: every block's, in the order first given.
    pub cells: Vec<Cell>,
    /// Configurations of every block, cloned from the catalogue, in catalogue order.
    pub configurations: Vec<Configuration>,
    /// The arms, in the order given.
    pub arms: Vec<Arm>,
    /// The design's blocks (one, `main`, when the manifest declares none).
    pub blocks: Vec<Block>,
    /// Budgets.
    pub budgets: Budgets,
    /// Analyses, in the order given.
    pub analyses: Vec<Analysis>,
    /// The ToolSandbox scenarios it plays (`[toolsandbox]`); out of the hash when
    /// absent, so a manifest without it keeps the hash it always had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolsandbox: Option<toolsandbox::ToolSandboxPart>,
    /// The configurations `--model` added for this run, each with the flag that made
    /// it (`openai-gpt-4.1-mini`, `openai/gpt-4.1-mini`); they replace the manifest's
    /// own selection in every block ([`Models`]). Empty (and out of the hash) without
    /// the flag.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<(String, String)>,
    /// Of those, the configurations the catalogue does not list (made from the flag
    /// alone): they have no listed prices (their cost is unknown, not zero) and no
    /// `context_window`, as the plan says. Out of the hash: what an episode is does not
    /// depend on it.
    #[serde(skip)]
    pub unlisted: Vec<String>,
}

/// The configurations of a run's `--model` flags ([`tbb_provider::model`]), each with
/// the flag as given. When there are any, they are the study's configurations for this
/// run: every block runs them instead of the configurations its manifest selects, and
/// a `configuration_caps` entry of a configuration they replace is left out. They join
/// the catalogue for the run, after its entries. A flag whose name the catalogue has
/// already (`openai/gpt-4.1-mini` and the catalogue's `openai-gpt-4.1-mini`) selects
/// that entry as the catalogue has it, enabled for the run, when it speaks the same
/// protocol on the flag's route; on another route it is refused.
#[derive(Debug, Clone, Default)]
pub struct Models {
    /// `(flag, configuration)`, in the order given.
    pub configurations: Vec<(String, Configuration)>,
}

impl Models {
    /// Whether no `--model` was given.
    pub fn is_empty(&self) -> bool {
        self.configurations.is_empty()
    }

    /// The configurations' names, in the order given.
    pub fn names(&self) -> Vec<String> {
        self.configurations
            .iter()
            .map(|(_, c)| c.name.clone())
            .collect()
    }
}

/// How the arms of one condition (a variant, a configuration and a repeat) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// Side by side, in any order (the paper's concurrent cap sweep).
    #[default]
    Concurrent,
    /// One after another, in the order listed, every repeat.
    Sequential,
    /// One after another, the order rotated by the repeat: repeat r starts with the
    /// (r mod n)-th arm (for two arms: AB, BA, AB, ...).
    Counterbalanced,
}

impl Schedule {
    /// Every schedule with its manifest name.
    pub const NAMES: [(&'static str, Schedule); 3] = [
        ("concurrent", Schedule::Concurrent),
        ("sequential", Schedule::Sequential),
        ("counterbalanced", Schedule::Counterbalanced),
    ];

    /// Whether one arm's episode waits for the previous arm's.
    pub fn is_ordered(self) -> bool {
        self != Schedule::Concurrent
    }
}

/// One block of the design: its own product of families × cells × configurations ×
/// arms × caps × repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Block {
    /// Its name (`block` column).
    pub name: String,
    /// Family names, in [`FamilySet`] order.
    pub families: Vec<String>,
    /// Cells, normalized, in the order given.
    pub cells: Vec<Cell>,
    /// Configuration names, in catalogue order.
    pub configurations: Vec<String>,
    /// Indices into [`Manifest::arms`], in the order given.
    pub arms: Vec<usize>,
    /// Completion caps of arms that pin none.
    pub completion_caps: Vec<u32>,
    /// Caps of single configurations, replacing `completion_caps` for them.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub configuration_caps: std::collections::BTreeMap<String, Vec<u32>>,
    /// Repeats of every condition.
    pub repeats: u32,
    /// The index of the first repeat: the block runs repeats
    /// `first_repeat .. first_repeat + repeats` (0 unless the manifest says).
    #[serde(skip_serializing_if = "is_zero")]
    pub first_repeat: u32,
    /// How the arms of a condition run.
    pub schedule: Schedule,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Block {
    /// The repeat indices the block runs.
    pub fn repeat_range(&self) -> std::ops::Range<u32> {
        self.first_repeat..self.first_repeat.saturating_add(self.repeats)
    }
}

/// One episode of a condition: an arm at a cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Index into [`Manifest::arms`].
    pub arm: usize,
    /// Completion cap.
    pub cap: u32,
}

impl Block {
    /// The completion caps a configuration runs at, for arms that pin none.
    pub fn caps_for(&self, configuration: &str) -> &[u32] {
        self.configuration_caps
            .get(configuration)
            .map_or(&self.completion_caps, |caps| caps)
    }

    /// The episodes of one condition of `configuration`: each arm at its pinned cap,
    /// or at each of the configuration's caps, arm-major, in the order listed.
    pub fn units(&self, arms: &[Arm], configuration: &str) -> Vec<Unit> {
        let mut units = Vec::new();
        for &arm in &self.arms {
            match arms.get(arm).and_then(|a| a.completion_cap) {
                Some(cap) => units.push(Unit { arm, cap }),
                None => units.extend(
                    self.caps_for(configuration)
                        .iter()
                        .map(|&cap| Unit { arm, cap }),
                ),
            }
        }
        units
    }

    /// The order in which `n` units run in `repeat`: positions into the listed units.
    pub fn order(&self, n: usize, repeat: u32) -> Vec<usize> {
        let start = match self.schedule {
            Schedule::Counterbalanced if n > 0 => repeat as usize % n,
            _ => 0,
        };
        (0..n).map(|i| (start + i) % n.max(1)).collect()
    }

    /// How a unit is named in the `schedule` column: the arm's name, with its cap when
    /// the arm runs at several caps in this block.
    pub fn unit_name(&self, arms: &[Arm], configuration: &str, unit: Unit) -> String {
        let name = arms.get(unit.arm).map_or("", |a| a.name.as_str());
        let several = arms
            .get(unit.arm)
            .is_some_and(|a| a.completion_cap.is_none())
            && self.caps_for(configuration).len() > 1;
        if several {
            format!("{name}@{}", unit.cap)
        } else {
            name.to_string()
        }
    }
}

impl Manifest {
    /// Loads `path`, layering the process's `TBB_*` environment variables and the
    /// `--set` pairs over it, and resolves it against `families` and the configuration
    /// catalogue it names.
    pub fn load(
        path: &Path,
        families: &FamilySet,
        overrides: &[(String, String)],
    ) -> Result<Manifest, ManifestError> {
        Manifest::load_with_models(path, families, overrides, &Models::default())
    }

    /// [`Manifest::load`] for a run with `--model` flags ([`Models`]).
    pub fn load_with_models(
        path: &Path,
        families: &FamilySet,
        overrides: &[(String, String)],
        models: &Models,
    ) -> Result<Manifest, ManifestError> {
        // `vars_os`: a variable whose value is not Unicode must not panic; only the
        // names of tbb's own variables matter, and their values are read as text.
        let env: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| {
                let k = k.into_string().ok()?;
                k.starts_with("TBB_")
                    .then(|| (k, v.to_string_lossy().into_owned()))
            })
            .collect();
        Manifest::read(path)
            .and_then(|text| Manifest::parse_inner(path, &text, families, overrides, &env, models))
    }

    fn read(path: &Path) -> Result<String, ManifestError> {
        read_text(path, MAX_SOURCE_BYTES).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                ManifestError::Missing {
                    path: path.to_path_buf(),
                }
            } else {
                ManifestError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })
    }

    /// [`Manifest::load`] with an explicit environment (`(name, value)` pairs; only
    /// `TBB_*` names for the manifest's keys are read; any other `TBB_*` name that tbb
    /// does not read is a problem).
    pub fn load_with_env(
        path: &Path,
        families: &FamilySet,
        overrides: &[(String, String)],
        env: &[(String, String)],
    ) -> Result<Manifest, ManifestError> {
        let text = Manifest::read(path)?;
        Manifest::parse_with_env(path, &text, families, overrides, env)
    }

    /// [`Manifest::load_with_env`] of a manifest's text; `path` names it in messages
    /// (the catalogue it names is still read from disk).
    pub fn parse_with_env(
        path: &Path,
        text: &str,
        families: &FamilySet,
        overrides: &[(String, String)],
        env: &[(String, String)],
    ) -> Result<Manifest, ManifestError> {
        Manifest::parse_inner(path, text, families, overrides, env, &Models::default())
    }

    fn parse_inner(
        path: &Path,
        text: &str,
        families: &FamilySet,
        overrides: &[(String, String)],
        env: &[(String, String)],
        models: &Models,
    ) -> Result<Manifest, ManifestError> {
        let src = SourceFile::new(path.display().to_string(), text);
        let invalid = |problems: Vec<Problem>| ManifestError::invalid(path.to_path_buf(), problems);
        let problem = |message: String, span: Option<std::ops::Range<usize>>, help: &str| {
            let (src, span) = src.at(span);
            Problem {
                message,
                src,
                span,
                label: "here".into(),
                help: Some(help.to_string()),
            }
        };
        const SCHEMA_HELP: &str = "see manifests/capacity.toml for every key a manifest may hold";

        // Stage 0: TOML syntax, with the span of the error.
        let syntax = |message: &str, span: Option<std::ops::Range<usize>>| {
            invalid(vec![problem(
                format!("{} is not valid TOML: {}", path.display(), message.trim()),
                span,
                SCHEMA_HELP,
            )])
        };
        let table: toml::Table = toml::from_str(text).map_err(|e| syntax(e.message(), e.span()))?;
        let spans = SpanIndex::parse(text).map_err(|e| syntax(&e.message, e.span))?;

        // Layering.
        let layers = layers::Layers::new(&table, spans, env, overrides).map_err(|e| {
            invalid(vec![problem(
                format!("cannot layer the overrides: {e}"),
                None,
                "overrides are `key.path=value`, e.g. `budgets.completion_caps=[4096]`",
            )])
        })?;
        let merged = layers.merged().map_err(|e| {
            invalid(vec![problem(
                format!("cannot layer the overrides: {e}"),
                None,
                "overrides are `key.path=value`, e.g. `budgets.completion_caps=[4096]`",
            )])
        })?;
        let mut sink = resolve::Sink {
            layers: &layers,
            src: src.clone(),
            problems: Vec::new(),
        };

        // NaN and infinities first: the merged JSON below cannot hold them (they would
        // become nulls, and nulls defaults), so they are found in the layers.
        let non_finite = layers.non_finite();
        for (at, x) in &non_finite {
            sink.at(
                at,
                format!("`{at}` = {} is not a finite number", toml_float(*x)),
                Some(
                    "no manifest value may be nan or inf; give a number, e.g. `repeats = 1`".into(),
                ),
            );
        }

        // Stage 1: the schema; an unknown key, or a value of the wrong type, is an error
        // at that value (its span, or the override that set it).
        let mut unknown = Vec::new();
        let mut note = |p: serde_ignored::Path<'_>| unknown.push(p.to_string());
        let parsed: Result<raw::RawManifest, _> =
            serde_path_to_error::deserialize(serde_ignored::Deserializer::new(&merged, &mut note));
        let raw = match parsed {
            Ok(raw) => raw,
            Err(e) => {
                let at = dotted(e.path());
                // The null a NaN became is already reported, at the NaN.
                if non_finite.iter().any(|(p, _)| *p == at) {
                    return Err(invalid(sink.problems));
                }
                let what = if at.is_empty() {
                    path.display().to_string()
                } else {
                    format!("`{at}`")
                };
                sink.at(
                    &at,
                    format!("{what} does not fit the manifest schema: {}", e.inner()),
                    Some(format!(
                        "{SCHEMA_HELP}; overrides are typed like TOML values, e.g. `repeats=2`, `budgets.completion_caps=[4096]`"
                    )),
                );
                return Err(invalid(sink.problems));
            }
        };
        // A non-finite value became a null, and a null a default: whatever stage 2 said
        // about it would follow from that default, not from the file.
        if !non_finite.is_empty() {
            return Err(invalid(sink.problems));
        }
        for p in &unknown {
            let (table, key) = p.rsplit_once('.').unwrap_or(("", p));
            let keys = raw::known_keys(table);
            let listed = if keys.is_empty() {
                SCHEMA_HELP.to_string()
            } else {
                format!(
                    "`{}` holds: {}",
                    if table.is_empty() {
                        "the manifest"
                    } else {
                        table
                    },
                    keys.join(", ")
                )
            };
            sink.unknown(p, "key", key, keys.iter().copied(), &listed);
        }

        // Stage 2: names, levels and rules.
        let catalogue_path = resolve::catalogue_path(&raw, path);
        let mut unlisted = Vec::new();
        let catalogue = if catalogue_path.is_file() {
            let mut catalogue = Catalogue::load(&catalogue_path)?;
            for (flag, c) in &models.configurations {
                let same_route = |entry: &Configuration| {
                    entry.provider == c.provider
                        && (c.base_url.is_none() || c.base_url == entry.base_url)
                };
                match catalogue
                    .configurations
                    .iter_mut()
                    .find(|entry| entry.name == c.name)
                {
                    // The flag names the catalogue's own configuration of this model:
                    // it runs as the catalogue has it (its key variable, route, prices
                    // and pinned version), disabled or not, since the flag asked for it.
                    Some(entry) if same_route(entry) => entry.enabled = true,
                    Some(entry) => sink.problems.push(Problem {
                        message: format!(
                            "--model {flag} makes the configuration `{}`, which the catalogue {} has already on another route ({} at {})",
                            c.name,
                            catalogue_path.display(),
                            tbb_core::compile::cell::level_name(&entry.provider),
                            entry.route()
                        ),
                        src: src.at(None).0,
                        span: None,
                        label: "here".into(),
                        help: Some(format!(
                            "drop --base-url (and unset OPENAI_BASE_URL) to run the catalogue's `{}`, or rename the catalogue's entry",
                            c.name
                        )),
                    }),
                    None => {
                        unlisted.push(c.name.clone());
                        catalogue.configurations.push(c.clone());
                    }
                }
            }
            Some(catalogue)
        } else {
            sink.at(
                "study.catalogue",
                format!("the configuration catalogue {} does not exist", catalogue_path.display()),
                Some("`catalogue` is a path relative to the manifest's directory (default configurations.toml)".into()),
            );
            None
        };
        let key_variables: Vec<&str> = catalogue
            .iter()
            .flat_map(|c| &c.configurations)
            .filter_map(|c| c.api_key_env.as_deref())
            .collect();
        for unread in layers::unread_variables(env, &key_variables) {
            sink.problems.push(Problem {
                message: unread.message,
                src: src.at(None).0,
                span: None,
                label: "here".into(),
                help: Some(unread.help),
            });
        }
        let selected = (!models.is_empty()).then(|| models.names());
        let resolved = resolve::resolve(
            &raw,
            &mut sink,
            families,
            catalogue.as_ref(),
            selected.as_deref(),
        );
        let problems = sink.problems;
        let Some(r) = resolved.filter(|_| problems.is_empty()) else {
            return Err(invalid(problems));
        };
        let mut manifest = Manifest {
            study: raw.study.name.clone(),
            path: path.to_path_buf(),
            catalogue: catalogue_path,
            content_hash: String::new(),
            families: r.families,
            cells: r.cells,
            configurations: r.configurations,
            arms: r.arms,
            blocks: r.blocks,
            budgets: r.budgets,
            analyses: r.analyses,
            toolsandbox: r.toolsandbox,
            models: models
                .configurations
                .iter()
                .map(|(flag, c)| (c.name.clone(), flag.clone()))
                .collect(),
            unlisted,
        };
        manifest.content_hash = manifest.compute_hash();
        Ok(manifest)
    }

    /// The canonical JSON the content hash is taken over (every field but the path).
    pub fn canonical_json(&self) -> String {
        // Plain structs, vectors and sorted maps of strings and numbers: cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    fn compute_hash(&self) -> String {
        blake3::hash(self.canonical_json().as_bytes())
            .to_hex()
            .to_string()
    }

    /// Episodes the manifest asks for: over the blocks, families × cells × repeats ×
    /// each configuration's units (arms at their caps).
    pub fn episode_count(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| {
                let units: u64 = b
                    .configurations
                    .iter()
                    .map(|c| b.units(&self.arms, c).len() as u64)
                    .sum();
                (b.families.len() * b.cells.len()) as u64 * u64::from(b.repeats) * units
            })
            .sum()
    }

    /// The menus the arms use, in the order first used (what the lanes analysis needs).
    pub fn menus(&self) -> Vec<Menu> {
        let mut out: Vec<Menu> = Vec::new();
        for a in &self.arms {
            if !out.contains(&a.form.menu) {
                out.push(a.form.menu);
            }
        }
        out
    }

    /// The distinct arm forms, in the order first used (each prompt's text is hashed
    /// into the lockfile once).
    pub fn forms(&self) -> Vec<ArmForm> {
        let mut out: Vec<ArmForm> = Vec::new();
        for a in &self.arms {
            if !out.contains(&a.form) {
                out.push(a.form);
            }
        }
        out
    }
}

/// A serde path as the dotted path of [`SpanIndex`] and the layers (`cells.list.0.v`).
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

/// A non-finite float as TOML writes it.
fn toml_float(x: f64) -> &'static str {
    if x.is_nan() {
        "nan"
    } else if x > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}
