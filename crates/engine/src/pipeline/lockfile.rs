//! Lockfiles (`lockfiles/<manifest>.lock`): the resolved manifest a run used, so a
//! rerun is reproducible and a drift is visible.
//!
//! Holds the tbb version, the manifest's content hash, the content hash of every family
//! and prompt the study reads, every configuration with its provider, model, pinned
//! version, prices and content hash, and (`[[upstream]]`) the blake3 of every table its
//! analyses read from another study ([`super::upstream`]). Secrets never enter it: a configuration names the
//! environment variable of its key, never the key. A configuration made by `--model`
//! says so (`added_by`), and so does the message of a run that lacks it. The episodes
//! `tbb apply --retry-infra` reran are listed (`[[retry]]`, [`super::retry`]): the
//! retry is the user's choice, and the record of it.
//!
//! `tbb apply` writes it (atomically); `tbb apply --locked` refuses to run when the
//! lockfile it would write differs from the one on disk.
//!
//! Never: reads anything but what it is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use thiserror::Error;

use super::dag::{config_object, short_name};
use super::key::hash_hex;
use super::retry::Retry;
use super::upstream::Pin;
use crate::manifest::Manifest;
use tbb_core::family::FamilySet;
use tbb_harness::Prompts;

/// The lockfile is missing, differs or cannot be written.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum LockfileError {
    /// `--locked` and the lockfile would change.
    #[error("the lockfile {} would change:\n{diff}", path.display())]
    #[diagnostic(
        code(tbb::lockfile::drift),
        help("the families, prompts, configurations or manifest changed since the lockfile was written; review the lines above, then run without --locked to update it")
    )]
    Drift {
        /// The lockfile.
        path: PathBuf,
        /// Removed (`-`) and added (`+`) lines.
        diff: String,
    },
    /// `--locked`, and the lockfile names a configuration this run does not have.
    #[error("the lockfile {} names the configuration `{name}`{}, which this run does not have", path.display(), added_by.as_deref().map(|f| format!(" (added by `{f}`)")).unwrap_or_default())]
    #[diagnostic(code(tbb::lockfile::configuration))]
    MissingConfiguration {
        /// The lockfile.
        path: PathBuf,
        /// The configuration.
        name: String,
        /// The flag that made it, as the lockfile records it.
        added_by: Option<String>,
        /// How to fix it.
        #[help]
        help: String,
    },
    /// `--locked` and there is no lockfile.
    #[error("--locked was given but there is no lockfile {}", path.display())]
    #[diagnostic(
        code(tbb::lockfile::missing),
        help("run `tbb apply` once without --locked to write it")
    )]
    Missing {
        /// The lockfile.
        path: PathBuf,
    },
    /// File system.
    #[error("cannot write the lockfile {}: {source}", path.display())]
    #[diagnostic(code(tbb::lockfile::io))]
    Io {
        /// The lockfile.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

#[derive(Serialize)]
struct Lock<'a> {
    tbb: &'a str,
    study: &'a str,
    manifest_hash: &'a str,
    families: BTreeMap<&'a str, String>,
    prompts: BTreeMap<String, String>,
    configurations: BTreeMap<&'a str, LockedConfiguration<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    toolsandbox: Option<LockedToolSandbox>,
    #[serde(skip_serializing_if = "<[Pin]>::is_empty")]
    upstream: &'a [Pin],
    #[serde(skip_serializing_if = "<[Retry]>::is_empty")]
    retry: &'a [Retry],
}

/// What a study with `[toolsandbox]` plays: the vendored data by hash, and how much of it.
#[derive(Serialize)]
struct LockedToolSandbox {
    /// blake3 of `vendor/toolsandbox/scenarios.json.gz`.
    scenarios_blake3: &'static str,
    /// blake3 of `vendor/toolsandbox/tools.json`.
    tools_blake3: &'static str,
    /// Scenarios played (each base scenario at each distraction count).
    scenarios: usize,
    /// The distraction counts.
    distraction_tools: Vec<u8>,
}

#[derive(Serialize)]
struct LockedConfiguration<'a> {
    organization: &'a str,
    provider: String,
    model: &'a str,
    version: &'a str,
    route: String,
    input_per_mtok: f64,
    output_per_mtok: f64,
    content_hash: String,
    /// The `--model` flag that made it (absent for the catalogue's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    added_by: Option<String>,
}

/// The lockfile's text for a manifest.
pub fn render(
    manifest: &Manifest,
    families: &FamilySet,
    prompts: &Prompts,
    prompts_dir: &Path,
    upstream: &[Pin],
    retries: &[Retry],
) -> String {
    let mut prompt_hashes = BTreeMap::new();
    for form in manifest.forms() {
        prompt_hashes.insert(
            short_name(&prompts_dir.join(form.prompt.file_name())),
            hash_hex(prompts.system(form.prompt).as_bytes()),
        );
    }
    prompt_hashes.insert(
        short_name(&prompts_dir.join("nudge.txt")),
        hash_hex(prompts.nudge.as_bytes()),
    );
    let lock = Lock {
        tbb: env!("CARGO_PKG_VERSION"),
        study: &manifest.study,
        manifest_hash: &manifest.content_hash,
        families: manifest
            .families
            .iter()
            .filter_map(|name| families.get(name))
            .map(|f| (f.name.as_str(), tbb_core::family::hex(f.content_hash())))
            .collect(),
        prompts: prompt_hashes,
        configurations: manifest
            .configurations
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    LockedConfiguration {
                        organization: &c.organization,
                        provider: tbb_core::compile::cell::level_name(&c.provider),
                        model: &c.model,
                        version: c.version.as_deref().unwrap_or("unpinned"),
                        route: c.route(),
                        input_per_mtok: c.prices.input_per_mtok,
                        output_per_mtok: c.prices.output_per_mtok,
                        content_hash: hash_hex(config_object(c).to_string().as_bytes()),
                        added_by: manifest
                            .models
                            .iter()
                            .find(|(name, _)| *name == c.name)
                            .map(|(_, flag)| format!("--model {flag}")),
                    },
                )
            })
            .collect(),
        toolsandbox: manifest.toolsandbox.as_ref().map(|t| LockedToolSandbox {
            scenarios_blake3: tbb_toolsandbox::data::VendoredFile::Scenarios.pin(),
            tools_blake3: tbb_toolsandbox::data::VendoredFile::Tools.pin(),
            scenarios: t.scenarios.len(),
            distraction_tools: t.distraction_tools.clone(),
        }),
        upstream,
        retry: retries,
    };
    let body = toml::to_string(&lock).unwrap_or_default();
    format!("# Written by `tbb apply`: the resolved manifest of this study. Do not edit.\n{body}")
}

/// Where a manifest's lockfile lives: `<lockfiles>/<manifest file stem>.lock`. The stem
/// is a name in a path, so it must be an identifier ([`tbb_diag::names`]).
pub fn path_for(lockfiles: &Path, manifest: &Manifest) -> Result<PathBuf, super::PipelineError> {
    let stem = manifest
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| manifest.study.clone());
    tbb_diag::names::path_under(lockfiles, &stem, ".lock").map_err(|problem| {
        super::PipelineError::PathName {
            what: "manifest file name",
            place: format!("{}/<name>.lock", lockfiles.display()),
            problem,
        }
    })
}

/// With `locked`, fails unless the lockfile on disk is exactly `text`.
pub fn check(path: &Path, text: &str, locked: bool) -> Result<(), LockfileError> {
    if !locked {
        return Ok(());
    }
    let Ok(old) = tbb_diag::input::read_text(path, tbb_diag::input::MAX_DATA_BYTES) else {
        return Err(LockfileError::Missing {
            path: path.to_path_buf(),
        });
    };
    if old == text {
        return Ok(());
    }
    if let Some(missing) = missing_configuration(path, &old, text) {
        return Err(missing);
    }
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = text.lines().collect();
    let mut diff = String::new();
    for l in old_lines.iter().filter(|l| !new_lines.contains(l)) {
        diff.push_str(&format!("  - {l}\n"));
    }
    for l in new_lines.iter().filter(|l| !old_lines.contains(l)) {
        diff.push_str(&format!("  + {l}\n"));
    }
    Err(LockfileError::Drift {
        path: path.to_path_buf(),
        diff: diff.trim_end().to_string(),
    })
}

/// The first configuration the lockfile `old` names that `new` lacks, as the error
/// saying how to get it back: a configuration of `--model` wants its flag, one of the
/// catalogue the catalogue and manifest that selected it.
fn missing_configuration(path: &Path, old: &str, new: &str) -> Option<LockfileError> {
    let configurations = |text: &str| -> Option<toml::Table> {
        let table: toml::Table = toml::from_str(text).ok()?;
        table.get("configurations")?.as_table().cloned()
    };
    let (old, new) = (configurations(old)?, configurations(new)?);
    let (name, entry) = old.iter().find(|(name, _)| !new.contains_key(*name))?;
    let added_by = entry
        .get("added_by")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let help = match &added_by {
        Some(flag) => format!(
            "pass `{flag}` again (with the same --base-url or OPENAI_BASE_URL) to run what the lockfile records, or run without --locked to write a lockfile without it"
        ),
        None => "select it again (the manifest's `[configurations]`, and its catalogue entry), or run without --locked to write a lockfile without it".to_string(),
    };
    Some(LockfileError::MissingConfiguration {
        path: path.to_path_buf(),
        name: name.clone(),
        added_by,
        help,
    })
}

/// Writes the lockfile atomically (temporary file, fsync, rename) if it changed.
pub fn write(path: &Path, text: &str) -> Result<(), LockfileError> {
    if tbb_diag::input::read_text(path, tbb_diag::input::MAX_DATA_BYTES)
        .is_ok_and(|old| old == text)
    {
        return Ok(());
    }
    tbb_tables::write_text(path, text).map_err(|source| LockfileError::Io {
        path: path.to_path_buf(),
        source,
    })
}
