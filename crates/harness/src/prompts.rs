//! The system prompts (`prompts/*.txt`): the base capacity prompt, the workflow prompt
//! and the interface guide, plus the fixed nudge sent after an empty response.
//!
//! The three system prompts differ only where the paper's variants differ: the workflow
//! prompt replaces the second sentence of the base prompt; the interface guide keeps it
//! and inserts its guide after it. A test checks exactly that.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Which system prompt an episode uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum PromptVariant {
    /// The base capacity prompt.
    #[default]
    Base,
    /// The workflow-prompt repair.
    Workflow,
    /// The interface-guide repair.
    InterfaceGuide,
}

impl PromptVariant {
    /// Every variant with its manifest name (an arm's `prompt`).
    pub const NAMES: [(&'static str, PromptVariant); 3] = [
        ("base", PromptVariant::Base),
        ("workflow", PromptVariant::Workflow),
        ("interface_guide", PromptVariant::InterfaceGuide),
    ];

    /// Its name as a repair in manifests and tables.
    pub fn repair_name(self) -> &'static str {
        match self {
            PromptVariant::Base => "none",
            PromptVariant::Workflow => "workflow_prompt",
            PromptVariant::InterfaceGuide => "interface_guide",
        }
    }

    /// Every repair name ([`PromptVariant::repair_name`]), in [`PromptVariant::NAMES`]
    /// order: the names the `repair` column takes.
    pub fn repair_names() -> &'static [&'static str] {
        static NAMES: LazyLock<[&str; 3]> =
            LazyLock::new(|| PromptVariant::NAMES.map(|(_, p)| p.repair_name()));
        &*NAMES
    }

    /// The prompt whose repair name is `name`.
    pub fn of_repair_name(name: &str) -> Option<PromptVariant> {
        PromptVariant::NAMES
            .iter()
            .map(|(_, p)| *p)
            .find(|p| p.repair_name() == name)
    }

    /// The file that holds it.
    pub fn file_name(self) -> &'static str {
        match self {
            PromptVariant::Base => "base.txt",
            PromptVariant::Workflow => "workflow.txt",
            PromptVariant::InterfaceGuide => "interface_guide.txt",
        }
    }
}

/// A prompt file that cannot be read.
#[derive(Debug, Error, miette::Diagnostic)]
#[error("cannot read prompt {}: {source}", path.display())]
#[diagnostic(
    code(tbb::harness::prompt),
    help("run tbb from the project root, or pass --prompts DIR")
)]
pub struct PromptError {
    /// The file.
    pub path: PathBuf,
    /// Cause.
    pub source: std::io::Error,
}

/// The prompt texts, loaded once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompts {
    /// Base.
    pub base: String,
    /// Workflow.
    pub workflow: String,
    /// Interface guide.
    pub interface_guide: String,
    /// The message sent after a response with neither text nor a tool call.
    pub nudge: String,
}

impl Prompts {
    /// Reads `dir/{base,workflow,interface_guide,nudge}.txt` (trailing newline trimmed).
    pub fn load(dir: &Path) -> Result<Prompts, PromptError> {
        let read = |name: &str| {
            let path = dir.join(name);
            tbb_diag::input::read_text(&path, tbb_diag::input::MAX_SOURCE_BYTES)
                .map(|s| s.trim_end().to_string())
                .map_err(|source| PromptError { path, source })
        };
        Ok(Prompts {
            base: read(PromptVariant::Base.file_name())?,
            workflow: read(PromptVariant::Workflow.file_name())?,
            interface_guide: read(PromptVariant::InterfaceGuide.file_name())?,
            nudge: read("nudge.txt")?,
        })
    }

    /// The system prompt of a variant.
    pub fn system(&self, variant: PromptVariant) -> &str {
        match variant {
            PromptVariant::Base => &self.base,
            PromptVariant::Workflow => &self.workflow,
            PromptVariant::InterfaceGuide => &self.interface_guide,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(text: &str) -> Vec<String> {
        text.split_inclusive(". ")
            .map(|s| s.trim().to_string())
            .collect()
    }

    #[test]
    fn the_variants_differ_only_where_the_papers_do() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let p = match Prompts::load(&dir) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let base = sentences(&p.base);
        let workflow = sentences(&p.workflow);
        let guide = sentences(&p.interface_guide);
        // Workflow: the second sentence replaced, everything else equal.
        assert_eq!(base.len(), workflow.len());
        for (i, (a, b)) in base.iter().zip(&workflow).enumerate() {
            assert_eq!(a == b, i != 1, "sentence {i}: {a} / {b}");
        }
        // Interface guide: the base with sentences inserted after the second.
        let inserted = guide.len() - base.len();
        assert!(inserted > 0);
        assert_eq!(guide[..2], base[..2]);
        assert_eq!(guide[2 + inserted..], base[2..]);
        assert!(guide[2].starts_with("Read returned records by their interface"));
    }
}
