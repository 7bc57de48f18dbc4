//! The vendored ToolSandbox data, pinned like a lockfile.
//!
//! `vendor/toolsandbox/` at the repository root holds two files exported from
//! apple/ToolSandbox at commit 165848b (its `NOTICE.md` says how): the scenario
//! definitions (`scenarios.json.gz`) and the agent-facing tool schemas (`tools.json`).
//! This module owns their blake3 pins and the checked way in: bytes whose hash differs
//! from the pin are refused with [`DataError::Unpinned`], which names the file and how
//! to fix it, so a silently edited or truncated copy can never be graded against.
//!
//! It must never read the file system: the caller hands bytes in, and the built-in
//! copies are compiled into the crate with `include_bytes!`.

use std::io::Read;

/// One of the vendored files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VendoredFile {
    /// `vendor/toolsandbox/scenarios.json.gz`: the 387 scenarios, gzip-compressed JSON.
    Scenarios,
    /// `vendor/toolsandbox/tools.json`: the 34 tools' schemas in OpenAI's function format.
    Tools,
}

impl VendoredFile {
    /// The file's path from the repository root.
    pub fn path(self) -> &'static str {
        match self {
            VendoredFile::Scenarios => "vendor/toolsandbox/scenarios.json.gz",
            VendoredFile::Tools => "vendor/toolsandbox/tools.json",
        }
    }

    /// The blake3 (hex) the crate accepts for this file.
    pub fn pin(self) -> &'static str {
        match self {
            VendoredFile::Scenarios => {
                "18ee15cf81121ffc19fcee35ea1d0557f3c471b71eb27db18abb95be66f16ffa"
            }
            VendoredFile::Tools => {
                "40a1fa5700f1c7eac141257bd6f1d1a4b357ecf8dced41dca436043cc71f0234"
            }
        }
    }

    /// The copy compiled into the crate.
    pub fn builtin_bytes(self) -> &'static [u8] {
        match self {
            VendoredFile::Scenarios => SCENARIOS_GZ,
            VendoredFile::Tools => TOOLS_JSON,
        }
    }
}

const SCENARIOS_GZ: &[u8] = include_bytes!("../../../vendor/toolsandbox/scenarios.json.gz");
const TOOLS_JSON: &[u8] = include_bytes!("../../../vendor/toolsandbox/tools.json");

/// Why vendored bytes were refused.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The bytes are not the pinned file.
    #[error(
        "{} has blake3 {found}, but tbb-toolsandbox pins {expected}: restore the file \
         byte for byte from the export of apple/ToolSandbox@165848b (vendor/toolsandbox/NOTICE.md), \
         or, if the data was changed on purpose, update the pin in crates/toolsandbox/src/data.rs \
         and record the change in vendor/toolsandbox/NOTICE.md",
        file.path()
    )]
    Unpinned {
        /// Which file.
        file: VendoredFile,
        /// The pin.
        expected: &'static str,
        /// The hash of the bytes handed in.
        found: String,
    },
    /// The pinned bytes did not decompress (cannot happen for the pinned file).
    #[error("{} does not decompress: {message}", file.path())]
    Gzip {
        /// Which file.
        file: VendoredFile,
        /// The decoder's message.
        message: String,
    },
    /// The bytes are not the JSON shape this crate reads.
    #[error("{} does not parse: {message}", file.path())]
    Json {
        /// Which file.
        file: VendoredFile,
        /// serde_json's message (with the line and column).
        message: String,
    },
}

/// Checks `bytes` against the pin of `file`.
pub fn verify(file: VendoredFile, bytes: &[u8]) -> Result<(), DataError> {
    let found = blake3::hash(bytes).to_hex().to_string();
    if found == file.pin() {
        Ok(())
    } else {
        Err(DataError::Unpinned {
            file,
            expected: file.pin(),
            found,
        })
    }
}

/// The pinned scenario file's JSON text, decompressed, with Python's infinities made
/// JSON (see [`finite_infinities`]).
pub(crate) fn scenarios_json(gz: &[u8]) -> Result<Vec<u8>, DataError> {
    verify(VendoredFile::Scenarios, gz)?;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .map_err(|e| DataError::Gzip {
            file: VendoredFile::Scenarios,
            message: e.to_string(),
        })?;
    Ok(finite_infinities(&out))
}

/// The largest float, standing for Python's `float("inf")`.
pub const INFINITY_STANDIN: &str = "1.7976931348623157e308";

/// Python's `json.dump` writes `float("inf")` as the bare token `Infinity`, which JSON
/// does not have; the export holds 36, all of them tolerances (`atol_dict`) meaning
/// "any value". Outside strings, `Infinity` and `-Infinity` become ±`f64::MAX`
/// ([`INFINITY_STANDIN`]), which no finite difference exceeds.
fn finite_infinities(json: &[u8]) -> Vec<u8> {
    const TOKEN: &[u8] = b"Infinity";
    let mut out = Vec::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if json[i..].starts_with(TOKEN) {
            out.extend_from_slice(INFINITY_STANDIN.as_bytes());
            i += TOKEN.len();
            continue;
        }
        out.push(b);
        i += 1;
    }
    out
}

/// Parses pinned JSON bytes into `T`.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    file: VendoredFile,
    json: &[u8],
) -> Result<T, DataError> {
    serde_json::from_slice(json).map_err(|e| DataError::Json {
        file,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_copies_match_their_pins() {
        for file in [VendoredFile::Scenarios, VendoredFile::Tools] {
            verify(file, file.builtin_bytes()).unwrap();
        }
    }

    #[test]
    fn a_changed_byte_is_refused_with_the_file_and_the_fix() {
        let mut bytes = TOOLS_JSON.to_vec();
        bytes[10] ^= 1;
        let err = verify(VendoredFile::Tools, &bytes).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("vendor/toolsandbox/tools.json has blake3 "));
        assert!(text.contains("update the pin in crates/toolsandbox/src/data.rs"));
        assert!(matches!(
            scenarios_json(&bytes),
            Err(DataError::Unpinned {
                file: VendoredFile::Scenarios,
                ..
            })
        ));
    }

    #[test]
    fn python_infinities_become_the_largest_float_outside_strings() {
        let text = br#"{"a": Infinity, "b": -Infinity, "c": "Infinity \" Infinity"}"#;
        let v: serde_json::Value = serde_json::from_slice(&finite_infinities(text)).unwrap();
        assert_eq!(v["a"], f64::MAX);
        assert_eq!(v["b"], -f64::MAX);
        assert_eq!(v["c"], "Infinity \" Infinity");
    }

    #[test]
    fn the_scenarios_decompress_to_json() {
        let json = scenarios_json(SCENARIOS_GZ).unwrap();
        assert_eq!(json.first(), Some(&b'['));
    }
}
