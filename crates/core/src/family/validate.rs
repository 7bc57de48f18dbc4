//! The rules a family file must satisfy, and resolution of raw definitions into
//! [`Family`] values. Collects every problem before failing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value as Json;
use tbb_diag::source::SourceFile;
use toml::Spanned;

use super::policy::{decide, has_type};
use super::schema::{
    CatalogueFile, CollectionDef, CoordinateDef, FactType, IntentFile, Op, Operation,
};
use super::{Connector, Family, FamilyError, Intent, Pools, Problem, PLACEHOLDERS};

/// Tools a family needs beyond its operational ones so that V = 128 can be filled
/// from connectors that differ from the route in at least two coordinates.
pub const MIN_FAR_TOOLS: usize = 128;
/// Near-miss connectors (one coordinate off, same collection) a family must offer so
/// the high-routing-difficulty menu has something to confuse.
pub const MIN_NEAR_MISS_SAME_COLLECTION: usize = 2;
/// OpenAI's limit on function names, the strictest of the three wire protocols.
pub const MAX_TOOL_NAME: usize = 64;
/// Bytes of a request template: it is sent in every request of every episode of the
/// intent (the repository's are under 1 KB).
pub const MAX_TEMPLATE_BYTES: usize = 16 * 1024;

pub(super) struct Source {
    pub dir_split: &'static str,
    pub display: PathBuf,
    /// The file's text as its problems show it.
    pub text: SourceFile,
    pub file: IntentFile,
}

struct Sink<'a> {
    display: &'a std::path::Path,
    text: &'a SourceFile,
    problems: &'a mut Vec<Problem>,
}

impl Sink<'_> {
    fn at<T>(&mut self, at: &Spanned<T>, message: impl Into<String>, help: Option<String>) {
        self.push(at.span(), message.into(), help);
    }

    fn push(&mut self, span: std::ops::Range<usize>, message: String, help: Option<String>) {
        let (src, span) = self.text.at_span(span);
        self.problems.push(Problem {
            label: "here".into(),
            message: format!("{}: {message}", self.display.display()),
            src,
            span,
            help,
        });
    }
}

pub(super) fn resolve(
    catalogue: &CatalogueFile,
    catalogue_source: (&std::path::Path, &SourceFile),
    sources: Vec<Source>,
) -> Result<(Vec<Arc<Intent>>, Vec<Family>), FamilyError> {
    let mut problems = Vec::new();

    // Collections are global: intents' own plus the catalogue's distractor-only ones.
    let mut collections: BTreeMap<String, Arc<CollectionDef>> = BTreeMap::new();
    for c in &catalogue.collections {
        collections.insert(c.name.clone(), Arc::new(c.clone()));
    }
    let mut codes: BTreeSet<String> = catalogue
        .collections
        .iter()
        .map(|c| c.code.clone())
        .collect();
    {
        let (display, text) = catalogue_source;
        let mut sink = Sink {
            display,
            text,
            problems: &mut problems,
        };
        for c in &catalogue.collections {
            if let Some(msg) = collection_problem(c) {
                let at = text.text().find(&format!("\"{}\"", c.name)).unwrap_or(0);
                sink.push(
                    at..at + c.name.len() + 2,
                    format!("collection `{}`: {msg}", c.name),
                    None,
                );
            }
        }
    }
    for s in &sources {
        let c = &s.file.collection;
        let mut sink = Sink {
            display: &s.display,
            text: &s.text,
            problems: &mut problems,
        };
        if collections.contains_key(&c.name) || !codes.insert(c.code.clone()) {
            sink.at(
                &s.file.intent.name,
                format!(
                    "collection `{}` (code `{}`) is defined twice",
                    c.name, c.code
                ),
                Some("collection names and codes are unique across all family files".into()),
            );
        }
        if let Some(msg) = collection_problem(c) {
            sink.at(
                &s.file.intent.name,
                format!("collection `{}`: {msg}", c.name),
                None,
            );
        }
        collections.insert(c.name.clone(), Arc::new(c.clone()));
    }

    let mut intents = Vec::new();
    let mut families = Vec::new();
    let mut intent_names = BTreeSet::new();
    let mut family_names = BTreeSet::new();
    let mut case_refs = BTreeSet::new();
    for s in &sources {
        let mut sink = Sink {
            display: &s.display,
            text: &s.text,
            problems: &mut problems,
        };
        let def = &s.file.intent;
        if !intent_names.insert(def.name.get_ref().clone()) {
            sink.at(
                &def.name,
                format!("intent `{}` is defined twice", def.name.get_ref()),
                None,
            );
        }
        let split_name = serde_json::to_value(def.split).ok();
        if split_name.as_ref().and_then(Json::as_str) != Some(s.dir_split) {
            sink.at(
                &def.name,
                format!(
                    "an intent of split {:?} sits in families/{}/",
                    def.split, s.dir_split
                ),
                Some("move the file or change `split`".into()),
            );
        }
        check_intent(&mut sink, &s.file);
        let intent = Arc::new(Intent {
            def: def.clone(),
            collection: Arc::new(s.file.collection.clone()),
            file: s.display.clone(),
        });
        for fam in &s.file.family {
            if !family_names.insert(fam.name.get_ref().clone()) {
                sink.at(
                    &fam.name,
                    format!("family `{}` is defined twice", fam.name.get_ref()),
                    None,
                );
            }
            if !case_refs.insert(fam.case_ref.clone()) {
                sink.at(
                    &fam.name,
                    format!("case_ref `{}` is used twice", fam.case_ref),
                    None,
                );
            }
            if let Some(f) = resolve_family(&mut sink, catalogue, &collections, &intent, fam) {
                families.push(f);
            }
        }
        intents.push(intent);
    }
    if problems.is_empty() {
        Ok((intents, families))
    } else {
        Err(FamilyError::invalid(problems))
    }
}

fn collection_problem(c: &CollectionDef) -> Option<String> {
    let kinds: BTreeSet<&str> = c.kinds.iter().map(|k| k.name.as_str()).collect();
    let mut suffixes = BTreeSet::new();
    let searches = c.tools.iter().filter(|t| t.op == Operation::Search).count();
    if searches != 1 {
        return Some(format!(
            "has {searches} search tools; exactly one is required"
        ));
    }
    for t in &c.tools {
        if !suffixes.insert(t.suffix.as_str()) {
            return Some(format!("tool suffix `{}` appears twice", t.suffix));
        }
        let needs_kind = !matches!(t.op, Operation::Search | Operation::Send);
        match (&t.kind, needs_kind) {
            (Some(k), true) if !kinds.contains(k.as_str()) => {
                return Some(format!("tool `{}` names unknown kind `{k}`", t.suffix))
            }
            (None, true) => return Some(format!("tool `{}` must name a `kind`", t.suffix)),
            (Some(_), false) => {
                return Some(format!(
                    "tool `{}` ({:?}) acts on no record kind; remove its `kind`",
                    t.suffix, t.op
                ))
            }
            _ => {}
        }
        let expected: &[&str] = match t.op {
            Operation::Search => &["query"],
            Operation::Read | Operation::Delete => &["id"],
            Operation::Update => &["id", "field", "value"],
            Operation::Pay => &["id", "amount"],
            Operation::Send => &["to", "subject", "body"],
        };
        let props: BTreeSet<&str> = t
            .parameters
            .get("properties")
            .and_then(Json::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if props != expected.iter().copied().collect() {
            return Some(format!(
                "tool `{}` ({:?}) must take exactly the parameters {expected:?}",
                t.suffix, t.op
            ));
        }
        if t.parameters.get("type").and_then(Json::as_str) != Some("object") {
            return Some(format!(
                "tool `{}` parameters must be `type = \"object\"`",
                t.suffix
            ));
        }
    }
    None
}

/// The compiler names each chain record's back-reference `<previous kind>_ref`
/// (`compile::store::back_reference_field`), so no family field may end that way.
const RESERVED_SUFFIX: &str = "_ref";
const RESERVED_HELP: &str =
    "the compiler adds `<kind>_ref` fields that point at the previous chain record; rename the field";

fn check_intent(sink: &mut Sink<'_>, file: &IntentFile) {
    let def = &file.intent;
    let coll = &file.collection;
    let kind_read = |k: &str| {
        coll.tools
            .iter()
            .any(|t| t.op == Operation::Read && t.kind.as_deref() == Some(k))
    };
    let template = def.template.get_ref();
    if template.len() > MAX_TEMPLATE_BYTES {
        sink.at(
            &def.template,
            format!(
                "the template is {} bytes; the limit is {MAX_TEMPLATE_BYTES}",
                template.len()
            ),
            Some("a template is one request's prose around its placeholders; shorten it".into()),
        );
    }
    for p in PLACEHOLDERS {
        let n = template.matches(p).count();
        if n != 1 {
            sink.at(
                &def.template,
                format!("the template holds {p} {n} times"),
                Some(format!(
                    "every template holds each of {} exactly once",
                    PLACEHOLDERS.join(" ")
                )),
            );
        }
    }
    if def.chain.is_empty() || def.chain.len() > 3 {
        sink.at(
            &def.name,
            format!("chain has {} stages; 1 to 3 are allowed", def.chain.len()),
            None,
        );
    }
    for k in def.chain.iter().chain(def.hop_kind.iter()) {
        if !kind_read(k) {
            sink.at(
                &def.name,
                format!("kind `{k}` has no read tool in collection `{}`", coll.name),
                None,
            );
        }
    }
    let mut required: BTreeSet<String> = coll
        .tools
        .iter()
        .filter(|t| {
            t.op == Operation::Search
                || (t.op == Operation::Read
                    && t.kind
                        .as_ref()
                        .is_some_and(|k| def.chain.contains(k) || def.hop_kind.as_ref() == Some(k)))
        })
        .map(|t| t.suffix.clone())
        .collect();
    if let Some(sc) = &def.state_change {
        required.insert(sc.tool.clone());
    }
    let declared: BTreeSet<String> = def.operational_tools.iter().cloned().collect();
    if declared != required {
        sink.at(
            &def.name,
            format!("operational_tools is {declared:?}, but the search tool, the chain's and hop's read tools and the state-change tool are {required:?}"),
            None,
        );
    }
    let mut fact_names = BTreeSet::new();
    let stages = def.chain.len() as u8;
    let fillers: BTreeSet<&str> = coll
        .kinds
        .iter()
        .flat_map(|k| k.filler.keys().map(String::as_str))
        .collect();
    for name in &fillers {
        if !super::is_field_name(name) {
            sink.at(
                &def.name,
                format!("filler field `{name}` must be a lowercase identifier"),
                None,
            );
        }
        if name.ends_with(RESERVED_SUFFIX) {
            sink.at(
                &def.name,
                format!("filler field `{name}` ends in `{RESERVED_SUFFIX}`"),
                Some(RESERVED_HELP.into()),
            );
        }
    }
    for f in &def.facts {
        let identifier = super::is_field_name(&f.name);
        if !identifier || f.name == "decision" || f.name == "sources" || f.name == "reference" {
            sink.at(
                &def.name,
                format!("fact name `{}` must be a lowercase identifier other than decision, sources and reference", f.name),
                Some("the answer holds decision, each fact and sources at one level; search summaries use reference".into()),
            );
        }
        if f.name.ends_with(RESERVED_SUFFIX) {
            sink.at(
                &def.name,
                format!("fact name `{}` ends in `{RESERVED_SUFFIX}`", f.name),
                Some(RESERVED_HELP.into()),
            );
        }
        if fillers.contains(f.name.as_str()) {
            sink.at(
                &def.name,
                format!("fact `{}` is also a filler field of a record kind", f.name),
                Some("a record must hold each requested fact once; rename the filler".into()),
            );
        }
        if !fact_names.insert(f.name.as_str()) {
            sink.at(
                &def.name,
                format!("fact `{}` is declared twice", f.name),
                None,
            );
        }
        if f.stage == 0 || f.stage > stages {
            sink.at(
                &def.name,
                format!(
                    "fact `{}` has stage {}; the chain has {stages}",
                    f.name, f.stage
                ),
                None,
            );
        }
        if f.alternatives.len() < 2 || !f.alternatives.iter().all(|v| has_type(v, f.fact_type)) {
            sink.at(
                &def.name,
                format!(
                    "fact `{}` needs at least two alternatives of type {:?}",
                    f.name, f.fact_type
                ),
                None,
            );
        }
    }
    for stage in 1..=stages {
        if !def.facts.iter().any(|f| f.stage == stage) {
            sink.at(
                &def.name,
                format!("chain stage {stage} holds no fact"),
                None,
            );
        }
    }
    let mut labels: BTreeSet<&str> = BTreeSet::from([def.policy.otherwise.as_str()]);
    for rule in &def.policy.rules {
        labels.insert(rule.label.as_str());
        for c in &rule.when {
            let Some(fact) = def.facts.iter().find(|f| f.name == c.fact) else {
                sink.at(
                    &def.name,
                    format!("policy condition names unknown fact `{}`", c.fact),
                    None,
                );
                continue;
            };
            let ok = match c.op {
                Op::Equals | Op::NotEquals => has_type(&c.value, fact.fact_type),
                Op::GreaterThan | Op::LessThan | Op::AtLeast | Op::AtMost => {
                    fact.fact_type == FactType::Integer && c.value.is_i64()
                }
                Op::Before | Op::After => {
                    fact.fact_type == FactType::Date && has_type(&c.value, FactType::Date)
                }
                Op::OneOf => c.value.as_array().is_some_and(|a| {
                    !a.is_empty() && a.iter().all(|v| has_type(v, fact.fact_type))
                }),
            };
            if !ok {
                sink.at(
                    &def.name,
                    format!(
                        "condition `{} {:?} {}` does not fit a {:?} fact",
                        c.fact, c.op, c.value, fact.fact_type
                    ),
                    None,
                );
            }
        }
    }
    if let Some(sc) = &def.state_change {
        if !labels.contains(sc.when.as_str()) {
            sink.at(
                &def.name,
                format!("state_change.when `{}` is not a policy label", sc.when),
                None,
            );
        }
        match coll.tools.iter().find(|t| t.suffix == sc.tool) {
            Some(t) if t.op.is_write() => {
                let takes_id = t.op != Operation::Send;
                if takes_id != sc.target_stage.is_some() {
                    sink.at(
                        &def.name,
                        format!(
                            "state change tool `{}` {} an id, so target_stage must {}",
                            sc.tool,
                            if takes_id { "takes" } else { "takes no" },
                            if takes_id { "be set" } else { "be absent" }
                        ),
                        None,
                    );
                }
                if sc.target_stage.is_some_and(|s| s == 0 || s > stages) {
                    sink.at(
                        &def.name,
                        "state_change.target_stage is not a chain stage",
                        None,
                    );
                }
                let params: BTreeSet<&str> = t.parameters["properties"]
                    .as_object()
                    .map(|m| m.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                // A send's body is free text; every other parameter the request fixes.
                let required = t.parameters["required"].as_array().into_iter().flatten();
                for r in required.filter_map(Json::as_str) {
                    if r != "id" && r != "body" && !sc.args.contains_key(r) {
                        sink.at(
                            &def.name,
                            format!(
                                "state_change.args must give `{r}`, a required parameter of `{}`",
                                sc.tool
                            ),
                            None,
                        );
                    }
                }
                for (k, v) in &sc.args {
                    if !params.contains(k.as_str()) || k == "id" {
                        sink.at(
                            &def.name,
                            format!(
                                "state_change arg `{k}` is not a parameter of `{}` other than id",
                                sc.tool
                            ),
                            None,
                        );
                    }
                    if let Some(fact) = v.strip_prefix("{fact:").and_then(|r| r.strip_suffix('}')) {
                        if !fact_names.contains(fact) {
                            sink.at(
                                &def.name,
                                format!("state_change arg `{k}` names unknown fact `{fact}`"),
                                None,
                            );
                        }
                    }
                }
            }
            _ => sink.at(
                &def.name,
                format!(
                    "state_change.tool `{}` is not a write tool of the collection",
                    sc.tool
                ),
                None,
            ),
        }
    }
}

fn coordinate<'a>(list: &'a [CoordinateDef], name: &str) -> Option<&'a CoordinateDef> {
    list.iter().find(|c| c.name == name)
}

fn resolve_family(
    sink: &mut Sink<'_>,
    catalogue: &CatalogueFile,
    collections: &BTreeMap<String, Arc<CollectionDef>>,
    intent: &Arc<Intent>,
    fam: &super::schema::FamilyDef,
) -> Option<Family> {
    let def = &intent.def;
    let ws = coordinate(&catalogue.workspaces, fam.workspace.get_ref());
    let region = coordinate(&catalogue.regions, fam.region.get_ref());
    if ws.is_none() {
        sink.at(
            &fam.workspace,
            format!("unknown workspace `{}`", fam.workspace.get_ref()),
            Some(suggest(
                fam.workspace.get_ref(),
                catalogue.workspaces.iter().map(|c| c.name.as_str()),
            )),
        );
    }
    if region.is_none() {
        sink.at(
            &fam.region,
            format!("unknown region `{}`", fam.region.get_ref()),
            Some(suggest(
                fam.region.get_ref(),
                catalogue.regions.iter().map(|c| c.name.as_str()),
            )),
        );
    }
    let mut facts = Vec::new();
    for f in &def.facts {
        match fam.facts.get_ref().get(&f.name) {
            Some(v) if has_type(v, f.fact_type) => facts.push((f.name.clone(), v.clone())),
            Some(v) => sink.at(
                &fam.facts,
                format!("fact `{}` = {v} is not a {:?}", f.name, f.fact_type),
                None,
            ),
            None => sink.at(&fam.facts, format!("fact `{}` is missing", f.name), None),
        }
    }
    for k in fam.facts.get_ref().keys() {
        if !def.facts.iter().any(|f| &f.name == k) {
            sink.at(
                &fam.facts,
                format!("`{k}` is not a fact of intent `{}`", intent.name()),
                None,
            );
        }
    }
    if facts.len() == def.facts.len() {
        let lookup = |n: &str| facts.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        match decide(&def.policy, lookup) {
            Some(d) if &d == fam.decision.get_ref() => {}
            Some(d) => sink.at(
                &fam.decision,
                format!(
                    "the policy gives `{d}` on these facts, not `{}`",
                    fam.decision.get_ref()
                ),
                Some("fix the facts or the decision: they must agree".into()),
            ),
            None => sink.at(
                &fam.decision,
                "the policy cannot be evaluated on these facts",
                None,
            ),
        }
        for f in &def.facts {
            let current = lookup(&f.name);
            if f.alternatives.iter().all(|a| Some(a) == current.as_ref()) {
                sink.at(
                    &fam.facts,
                    format!(
                        "fact `{}` has no alternative different from its value",
                        f.name
                    ),
                    None,
                );
            }
        }
    }
    let permitted = def
        .state_change
        .as_ref()
        .filter(|sc| &sc.when == fam.decision.get_ref());
    let expected = permitted.map_or("none", |sc| sc.tool.as_str());
    if fam.state_change.get_ref() != expected {
        sink.at(
            &fam.state_change,
            format!(
                "with decision `{}` the permitted state change is `{expected}`",
                fam.decision.get_ref()
            ),
            None,
        );
    }
    let mut pools = Pools {
        workspaces: ws.into_iter().cloned().collect(),
        regions: region.into_iter().cloned().collect(),
        collections: vec![intent.collection.clone()],
    };
    for name in &fam.distractors.workspaces {
        match coordinate(&catalogue.workspaces, name) {
            Some(c) if !pools.workspaces.contains(c) => pools.workspaces.push(c.clone()),
            Some(_) => sink.at(
                &fam.name,
                format!("distractor workspace `{name}` repeats"),
                None,
            ),
            None => sink.at(
                &fam.name,
                format!("unknown distractor workspace `{name}`"),
                None,
            ),
        }
    }
    for name in &fam.distractors.regions {
        match coordinate(&catalogue.regions, name) {
            Some(c) if !pools.regions.contains(c) => pools.regions.push(c.clone()),
            Some(_) => sink.at(
                &fam.name,
                format!("distractor region `{name}` repeats"),
                None,
            ),
            None => sink.at(
                &fam.name,
                format!("unknown distractor region `{name}`"),
                None,
            ),
        }
    }
    for name in &fam.distractors.collections {
        match collections.get(name) {
            Some(c) if !pools.collections.iter().any(|p| p.name == c.name) => {
                pools.collections.push(c.clone());
            }
            Some(_) => sink.at(
                &fam.name,
                format!("distractor collection `{name}` repeats"),
                None,
            ),
            None => sink.at(
                &fam.name,
                format!("unknown distractor collection `{name}`"),
                Some(suggest(name, collections.keys().map(String::as_str))),
            ),
        }
    }
    let (ws, region) = (ws?.clone(), region?.clone());
    if facts.len() != def.facts.len() {
        return None;
    }
    let route = Connector {
        workspace: ws,
        region,
        collection: intent.collection.clone(),
    };
    for t in &route.collection.tools {
        let name = route.tool_name(&t.suffix);
        if name.len() > MAX_TOOL_NAME {
            sink.at(
                &fam.name,
                format!("tool name `{name}` is longer than {MAX_TOOL_NAME}"),
                None,
            );
        }
    }
    let family = Family {
        name: fam.name.get_ref().clone(),
        intent: intent.clone(),
        case_ref: fam.case_ref.clone(),
        route,
        facts,
        decision: fam.decision.get_ref().clone(),
        permitted_change: permitted.cloned(),
        pools,
        def: fam.clone(),
        content_hash: std::sync::OnceLock::new(),
    };
    let candidates = family.candidate_connectors();
    let far_tools: usize = candidates
        .iter()
        .filter(|(_, shared)| *shared <= 1)
        .map(|(c, _)| c.collection.tools.len())
        .sum();
    let near_same = candidates
        .iter()
        .filter(|(c, shared)| *shared == 2 && c.collection.name == family.route.collection.name)
        .count();
    if far_tools < MIN_FAR_TOOLS {
        sink.at(&fam.name, format!("its distractor pools give {far_tools} tools on connectors two coordinates away from the route; at least {MIN_FAR_TOOLS} are needed for V = 128"), Some("add workspaces, regions or collections to `distractors`".into()));
    }
    if near_same < MIN_NEAR_MISS_SAME_COLLECTION {
        sink.at(&fam.name, format!("its pools give {near_same} near-miss connectors of the route's collection; at least {MIN_NEAR_MISS_SAME_COLLECTION} are needed"), None);
    }
    Some(family)
}

fn suggest<'a>(name: &str, options: impl Iterator<Item = &'a str> + Clone) -> String {
    match super::closest(name, options.clone()) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("known names: {}", options.collect::<Vec<_>>().join(", ")),
    }
}

/// [`Family::content_hash`]: blake3 over the canonical JSON of everything that
/// determines a family's variants.
pub(super) fn content_hash(
    intent: &Intent,
    fam: &super::schema::FamilyDef,
    route: &Connector,
    pools: &Pools,
) -> [u8; 32] {
    #[derive(serde::Serialize)]
    struct KeyInput<'a> {
        version: &'static str,
        intent: &'a super::schema::IntentDef,
        collection: &'a CollectionDef,
        family: &'a super::schema::FamilyDef,
        route: &'a Connector,
        pools: &'a Pools,
    }
    let input = KeyInput {
        version: "family-hash/1",
        intent: &intent.def,
        collection: &intent.collection,
        family: fam,
        route,
        pools,
    };
    // Serialising plain structs of strings, maps (sorted) and JSON values cannot fail.
    let bytes = serde_json::to_vec(&input).unwrap_or_default();
    *blake3::hash(&bytes).as_bytes()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::family::{FamilyError, FamilySet};

    /// A families tree holding the catalogue and one intent file, edited by `edit`.
    fn load_with(edit: impl Fn(String) -> String) -> Result<FamilySet, FamilyError> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../families");
        let dir = tempfile::tempdir().map_err(|source| FamilyError::Io {
            path: "tempdir".into(),
            source,
        })?;
        let root = dir.path().join("families");
        for split in ["core", "holdout", "frontier"] {
            std::fs::create_dir_all(root.join(split)).map_err(|source| FamilyError::Io {
                path: root.clone(),
                source,
            })?;
        }
        let copy = |from: &Path, to: &Path, f: &dyn Fn(String) -> String| {
            let text = std::fs::read_to_string(from).unwrap_or_default();
            std::fs::write(to, f(text)).map_err(|source| FamilyError::Io {
                path: to.to_path_buf(),
                source,
            })
        };
        copy(
            &repo.join("catalogue.toml"),
            &root.join("catalogue.toml"),
            &|t| t,
        )?;
        copy(
            &repo.join("core/overdue_escalation.toml"),
            &root.join("core/overdue_escalation.toml"),
            &edit,
        )?;
        FamilySet::load(&root)
    }

    fn problems(edit: impl Fn(String) -> String) -> String {
        match load_with(edit) {
            Ok(_) => String::from("loaded"),
            Err(FamilyError::Invalid { problems, .. }) => problems
                .iter()
                .map(|p| format!("{} | {}", p.message, p.help.clone().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_unedited_intent_loads() {
        assert_eq!(problems(|t| t), "loaded");
    }

    #[test]
    fn a_decision_the_policy_does_not_give_is_rejected_at_its_span() {
        let out = problems(|t| t.replacen("decision = \"escalate\"", "decision = \"hold\"", 1));
        assert!(
            out.contains("the policy gives `escalate` on these facts, not `hold`"),
            "{out}"
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let out = problems(|t| {
            t.replacen("decision = \"escalate\"", "decision = \"hold\"", 1)
                .replacen(
                    "workspace = \"contoso-ops\"",
                    "workspace = \"contoso-opz\"",
                    1,
                )
        });
        assert!(out.contains("not `hold`"), "{out}");
        assert!(out.contains("unknown workspace `contoso-opz`"), "{out}");
        assert!(out.contains("did you mean `contoso-ops`?"), "{out}");
    }

    #[test]
    fn a_misspelled_key_is_a_schema_error() {
        let out = problems(|t| t.replacen("decision = \"escalate\"", "decison = \"escalate\"", 1));
        assert!(out.contains("unknown field `decison`"), "{out}");
    }

    #[test]
    fn a_fact_that_collides_with_the_answer_or_a_filler_is_rejected() {
        let out = problems(|t| t.replace("collector_email", "sources"));
        assert!(
            out.contains("fact name `sources` must be a lowercase identifier"),
            "{out}"
        );
        let out = problems(|t| t.replace("currency = \"EUR\"", "status = \"EUR\""));
        assert!(
            out.contains("fact `status` is also a filler field"),
            "{out}"
        );
    }

    #[test]
    fn a_state_change_must_fix_every_required_argument() {
        let out = problems(|t| {
            t.replace(
                "args = { field = \"escalation\", value = \"collections\" }",
                "args = { field = \"escalation\" }",
            )
        });
        assert!(out.contains("state_change.args must give `value`"), "{out}");
    }

    #[test]
    fn a_state_change_that_disagrees_with_the_decision_is_rejected() {
        let out = problems(|t| {
            t.replacen(
                "state_change = \"update_invoice\"",
                "state_change = \"none\"",
                1,
            )
        });
        assert!(
            out.contains("the permitted state change is `update_invoice`"),
            "{out}"
        );
    }

    #[test]
    fn too_few_distractors_for_a_full_menu_are_rejected() {
        let out = problems(|t| {
            t.replacen(
                "distractors = { workspaces = [\"contoso-ops\", \"tailspin-sales\", \"fabrikam-legal\"], regions = [\"us-east\", \"ap-south\", \"eu-central\"], collections = [\"payables\", \"ledger\", \"mailbox\", \"calendar_events\"] }",
                "distractors = { workspaces = [\"contoso-ops\"], regions = [\"us-east\"], collections = [] }",
                1,
            )
        });
        assert!(out.contains("at least 128 are needed for V = 128"), "{out}");
    }

    #[test]
    fn a_template_missing_a_placeholder_is_rejected() {
        let out = problems(|t| t.replacen("{evidence}\n", "", 1));
        assert!(
            out.contains("the template holds {evidence} 0 times"),
            "{out}"
        );
    }
}
