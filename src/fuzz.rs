//! The entry points of the fuzz targets (`fuzz/`, run with cargo-fuzz) and of their
//! stable smoke test (`tests/it/fuzz_smoke.rs`): each takes arbitrary bytes, runs one of
//! tbb's readers of outside input over them, and must never panic, whatever the bytes.
//! An error is a correct answer; a panic, a hang or an abort is a defect. Each returns
//! whether the input was accepted, so that the smoke test can tell that its seeds
//! reach the reader's depths rather than an early refusal.
//!
//! The repository's families and their catalogue (for the manifest and family-file
//! targets) are read once, from this package's directory.
//!
//! Never: writes a file, or reaches the network. A fuzzed manifest may name a
//! catalogue on disk; it is read with the size limit and refusal of anything but a
//! regular file that every user file has ([`tbb_diag::input`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::family::FamilySet;

fn families_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("families")
}

fn families() -> Option<&'static FamilySet> {
    static SET: OnceLock<Option<FamilySet>> = OnceLock::new();
    SET.get_or_init(|| FamilySet::load(&families_root()).ok())
        .as_ref()
}

fn families_catalogue() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        tbb_diag::input::read_text(
            &families_root().join("catalogue.toml"),
            tbb_diag::input::MAX_SOURCE_BYTES,
        )
        .unwrap_or_default()
    })
}

/// Checks `bytes` as a study manifest against the repository's families.
pub fn manifest(bytes: &[u8]) -> bool {
    let (Ok(text), Some(families)) = (std::str::from_utf8(bytes), families()) else {
        return false;
    };
    crate::manifest::Manifest::parse_with_env(
        Path::new("manifests/fuzz.toml"),
        text,
        families,
        &[],
        &[],
    )
    .is_ok()
}

/// Checks `bytes` as a configuration catalogue.
pub fn catalogue(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes)
        .is_ok_and(|text| crate::provider::Catalogue::parse(Path::new("fuzz.toml"), text).is_ok())
}

/// Loads `bytes` as the one family file of a family set with the repository's
/// catalogue of collections.
pub fn family_file(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let root = Path::new("families");
    FamilySet::parse(
        root,
        families_catalogue(),
        vec![("core", root.join("core/fuzz.toml"), text.to_string())],
    )
    .is_ok()
}

/// Reads `bytes` as a cache's blobs file.
pub fn cache_blobs(bytes: &[u8]) -> bool {
    crate::pipeline::cache::blob_rows(bytes.to_vec()).is_ok()
}

/// Parses `bytes` as a response body of each of the three wire protocols; accepted
/// when one of them takes it.
pub fn provider_response(bytes: &[u8]) -> bool {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return false;
    };
    let openai = crate::provider::openai::parse_response(json.clone()).is_ok();
    let anthropic = crate::provider::anthropic::parse_response(json.clone()).is_ok();
    let gemini = crate::provider::gemini::parse_response(json).is_ok();
    openai || anthropic || gemini
}

/// A target's function: whether it accepted the bytes.
pub type Target = fn(&[u8]) -> bool;

/// Every target, by the name of its directory under `fuzz/corpus/`.
pub const TARGETS: [(&str, Target); 5] = [
    ("manifest", manifest),
    ("catalogue", catalogue),
    ("family_file", family_file),
    ("cache_blobs", cache_blobs),
    ("provider_response", provider_response),
];
