//! Task families as data: loads `families/**/*.toml`, validates them, and resolves them
//! into [`Family`] values the compiler can use.
//!
//! Owns: the family schema ([`schema`]), the decision-policy language ([`policy`]), the
//! rules a family file must satisfy, each family's content hash, and the universe of
//! connectors a family's distractors are drawn from.
//!
//! Invariants: loading is all-or-nothing — every problem in every file is collected and
//! reported at once as a miette diagnostic pointing at its span, and no family is
//! returned unless all files are valid. A family's content hash covers every value that
//! can change a compiled variant (not the file's comments or layout).
//!
//! Never: compiles variants, touches records, or knows about providers. Reading files is
//! the only I/O, and it happens in [`FamilySet::load`] alone.

pub mod error;
pub mod policy;
pub mod schema;
mod validate;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value as Json;
use tbb_diag::input::{read_text, MAX_SOURCE_BYTES};
use tbb_diag::source::SourceFile;

pub use error::{FamilyError, Problem};
pub use schema::{
    CollectionDef, CoordinateDef, Domain, FactType, IntentDef, Operation, Split, StateChangeRule,
    ToolDef,
};

/// The directories of `families/`, in load order.
pub const SPLITS: [&str; 3] = ["core", "holdout", "frontier"];

/// The placeholders every request template holds exactly once.
pub const PLACEHOLDERS: [&str; 8] = [
    "{case}",
    "{route}",
    "{start}",
    "{facts}",
    "{policy}",
    "{state_change}",
    "{evidence}",
    "{schema}",
];

/// A collection placed at a workspace and a region.
#[derive(Debug, Clone, Serialize)]
pub struct Connector {
    /// First coordinate.
    pub workspace: CoordinateDef,
    /// Second coordinate.
    pub region: CoordinateDef,
    /// Third coordinate, with its kinds and tools.
    pub collection: Arc<CollectionDef>,
}

impl Connector {
    /// Prefix of every tool of this connector (`nwf_euw_recv`).
    pub fn id(&self) -> String {
        format!(
            "{}_{}_{}",
            self.workspace.code, self.region.code, self.collection.code
        )
    }

    /// The full name of one of this connector's tools.
    pub fn tool_name(&self, suffix: &str) -> String {
        format!("{}_{}", self.id(), suffix)
    }

    /// How many of the three coordinates this connector shares with `other`.
    pub fn shared_coordinates(&self, other: &Connector) -> usize {
        usize::from(self.workspace == other.workspace)
            + usize::from(self.region == other.region)
            + usize::from(self.collection.name == other.collection.name)
    }
}

/// An intent: what its families share.
#[derive(Debug, Serialize)]
pub struct Intent {
    /// The definition as written.
    pub def: IntentDef,
    /// The route collection.
    pub collection: Arc<CollectionDef>,
    /// The file it came from (relative to the families root).
    #[serde(skip)]
    pub file: PathBuf,
}

impl Intent {
    /// The intent's name.
    pub fn name(&self) -> &str {
        self.def.name.get_ref()
    }
}

/// A validated, resolved task family.
#[derive(Debug)]
pub struct Family {
    /// Unique family name.
    pub name: String,
    /// Its intent.
    pub intent: Arc<Intent>,
    /// The case reference (first search query).
    pub case_ref: String,
    /// The required source route.
    pub route: Connector,
    /// Current fact values, in the intent's fact order.
    pub facts: Vec<(String, Json)>,
    /// The decision label.
    pub decision: String,
    /// The permitted state change, if the decision calls for one.
    pub permitted_change: Option<StateChangeRule>,
    /// Coordinates distractor connectors are combined from (route coordinates included).
    pub pools: Pools,
    /// Its definition as written, kept for [`Family::content_hash`].
    pub(crate) def: schema::FamilyDef,
    /// blake3 of everything that determines this family's variants, computed on first
    /// use: a study uses a few of the families, and hashing one serialises its pools'
    /// full collection definitions.
    pub(crate) content_hash: std::sync::OnceLock<[u8; 32]>,
}

/// Distractor coordinate pools, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Pools {
    /// Workspaces, the route's first.
    pub workspaces: Vec<CoordinateDef>,
    /// Regions, the route's first.
    pub regions: Vec<CoordinateDef>,
    /// Collections, the route's first.
    pub collections: Vec<Arc<CollectionDef>>,
}

impl Family {
    /// The family's domain.
    pub fn domain(&self) -> Domain {
        self.intent.def.domain
    }

    /// The family's split.
    pub fn split(&self) -> Split {
        self.intent.def.split
    }

    /// The current value of a fact.
    pub fn fact(&self, name: &str) -> Option<&Json> {
        self.facts.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Full names of the operational tools, in the intent's order.
    pub fn operational_tools(&self) -> Vec<String> {
        self.intent
            .def
            .operational_tools
            .iter()
            .map(|s| self.route.tool_name(s))
            .collect()
    }

    /// Every connector other than the route that the pools can form, in a fixed order
    /// (workspace, region, collection as listed), with the number of coordinates it
    /// shares with the route.
    pub fn candidate_connectors(&self) -> Vec<(Connector, usize)> {
        let mut out = Vec::new();
        for w in &self.pools.workspaces {
            for r in &self.pools.regions {
                for c in &self.pools.collections {
                    let conn = Connector {
                        workspace: w.clone(),
                        region: r.clone(),
                        collection: c.clone(),
                    };
                    let shared = conn.shared_coordinates(&self.route);
                    if shared < 3 {
                        out.push((conn, shared));
                    }
                }
            }
        }
        out
    }

    /// blake3 over the canonical JSON of everything that determines the family's
    /// variants: the intent, its collection, the family's own definition and its
    /// resolved route and pools (with the distractor collections' full definitions).
    pub fn content_hash(&self) -> &[u8; 32] {
        self.content_hash.get_or_init(|| {
            validate::content_hash(&self.intent, &self.def, &self.route, &self.pools)
        })
    }

    /// Hex of the first 8 bytes of the content hash, for display.
    pub fn short_hash(&self) -> String {
        hex(&self.content_hash()[..8])
    }
}

/// Field names are lowercase identifiers (`[a-z0-9_]+`), so they never collide with an
/// encoding's own keys (compact's `@` columns) or need escaping in a JSON pointer.
pub fn is_field_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every family, loaded and validated.
#[derive(Debug)]
pub struct FamilySet {
    /// The root directory they came from.
    pub root: PathBuf,
    /// All intents, by file order (core, holdout, frontier; files sorted).
    pub intents: Vec<Arc<Intent>>,
    /// All families, in intent order then file order.
    pub families: Vec<Family>,
}

impl FamilySet {
    /// Loads `root/catalogue.toml` and every `root/{core,holdout,frontier}/*.toml`.
    /// All-or-nothing: any problem anywhere returns an error listing every problem.
    /// Every file is read with the size limit of a file people write
    /// ([`tbb_diag::input::MAX_SOURCE_BYTES`]).
    pub fn load(root: &Path) -> Result<FamilySet, FamilyError> {
        let catalogue = read(&root.join("catalogue.toml"))?;
        let mut files = Vec::new();
        for split in SPLITS {
            let dir = root.join(split);
            let entries = std::fs::read_dir(&dir).map_err(|source| FamilyError::Io {
                path: dir.clone(),
                source,
            })?;
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            paths.sort();
            for path in paths {
                let text = read(&path)?;
                files.push((split, path, text));
            }
        }
        FamilySet::parse(root, &catalogue, files)
    }

    /// [`FamilySet::load`] of texts already read: the catalogue's, and each family
    /// file's with its split (`core`, `holdout` or `frontier`) and its path under
    /// `root` (which names it in messages).
    pub fn parse(
        root: &Path,
        catalogue_text: &str,
        files: Vec<(&'static str, PathBuf, String)>,
    ) -> Result<FamilySet, FamilyError> {
        // Paths in messages are relative to the directory holding `root`, as the user
        // usually typed them (`families/core/x.toml`).
        let shown = |path: &Path| -> PathBuf {
            path.strip_prefix(root.parent().unwrap_or(root))
                .unwrap_or(path)
                .to_path_buf()
        };
        let mut problems = Vec::new();
        let catalogue_shown = shown(&root.join("catalogue.toml"));
        let catalogue: Option<schema::CatalogueFile> = parse(&catalogue_shown, catalogue_text)
            .map_err(|p| problems.push(*p))
            .ok();
        let mut sources = Vec::new();
        for (split, path, text) in files {
            let display = shown(&path);
            match parse::<schema::IntentFile>(&display, &text) {
                Ok(file) => sources.push(validate::Source {
                    dir_split: split,
                    text: SourceFile::new(display.display().to_string(), &text),
                    display,
                    file,
                }),
                Err(p) => problems.push(*p),
            }
        }
        // Every file is parsed before any is judged, so all syntax errors show at once;
        // resolution needs every file, so it waits until they all parse.
        let Some(catalogue) = catalogue.filter(|_| problems.is_empty()) else {
            return Err(FamilyError::invalid(problems));
        };
        let (intents, families) = validate::resolve(
            &catalogue,
            (
                &catalogue_shown,
                &SourceFile::new(catalogue_shown.display().to_string(), catalogue_text),
            ),
            sources,
        )?;
        Ok(FamilySet {
            root: root.to_path_buf(),
            intents,
            families,
        })
    }

    /// The family with this name.
    pub fn get(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// Family names closest to `name`, for "did you mean".
    pub fn suggest(&self, name: &str) -> Option<&str> {
        closest(name, self.families.iter().map(|f| f.name.as_str()))
    }

    /// Families of one split.
    pub fn split(&self, split: Split) -> impl Iterator<Item = &Family> {
        self.families.iter().filter(move |f| f.split() == split)
    }
}

pub use tbb_diag::names::{closest, edit_distance};

fn read(path: &Path) -> Result<String, FamilyError> {
    read_text(path, MAX_SOURCE_BYTES).map_err(|source| FamilyError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn parse<T: serde::de::DeserializeOwned>(shown: &Path, text: &str) -> Result<T, Box<Problem>> {
    toml::from_str(text).map_err(|e| {
        let (src, span) =
            SourceFile::new(shown.display().to_string(), text).at_span(e.span().unwrap_or(0..0));
        Box::new(Problem {
            message: format!(
                "{} does not fit the family schema: {}",
                shown.display(),
                e.message()
            ),
            src,
            span,
            label: "here".into(),
            help: Some(
                "see crates/core/src/family/schema.rs for every key a family file may hold".into(),
            ),
        })
    })
}

/// The repository's families, loaded once, for unit tests.
#[cfg(test)]
pub(crate) fn repository_families() -> &'static FamilySet {
    static SET: std::sync::OnceLock<FamilySet> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../families");
        match FamilySet::load(&root) {
            Ok(set) => set,
            Err(e) => panic!("{:?}", miette::Report::new(e)),
        }
    })
}

/// One family of the repository, for unit tests.
#[cfg(test)]
pub(crate) fn repository_family(name: &str) -> &'static Family {
    match repository_families().get(name) {
        Some(f) => f,
        None => panic!("no family {name}"),
    }
}
