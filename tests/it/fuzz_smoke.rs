//! The fuzz targets on stable Rust: each target's function (`tbb::fuzz`) over its seed
//! corpus (`fuzz/corpus/<target>/`) and over deterministic mutations of the seeds
//! (ChaCha-seeded: bit flips, byte overwrites, deletions, insertions of random bytes
//! and of TOML/JSON tokens, duplications, truncations). No input may panic. The real
//! fuzzer (fuzz/README.md) explores far more; this keeps the targets honest in every
//! `cargo test`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Mutants per seed file.
const MUTANTS_PER_SEED: usize = 400;

/// Tokens that steer a mutant towards the parsers' interesting paths.
const TOKENS: [&str; 16] = [
    "\"",
    "[",
    "]",
    "{",
    "}",
    "=",
    ",",
    "\n",
    "[[",
    "nan",
    "-1",
    "1e999",
    "\u{1b}",
    "\\u0000",
    "18446744073709551616",
    "\u{202e}",
];

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.display().to_string(), bytes)
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

fn mutate(seed: &[u8], rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let at = if bytes.is_empty() {
            0
        } else {
            rng.random_range(0..bytes.len())
        };
        match rng.random_range(0..7) {
            0 if !bytes.is_empty() => bytes[at] ^= 1 << rng.random_range(0..8),
            1 if !bytes.is_empty() => bytes[at] = rng.random(),
            2 if !bytes.is_empty() => {
                let end = (at + rng.random_range(1..=64)).min(bytes.len());
                bytes.drain(at..end);
            }
            3 => {
                let n = rng.random_range(1..=16);
                let noise: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                bytes.splice(at..at, noise);
            }
            4 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                bytes.splice(at..at, token.iter().copied());
            }
            5 if !bytes.is_empty() => {
                let end = (at + rng.random_range(1..=256)).min(bytes.len());
                let chunk = bytes[at..end].to_vec();
                bytes.splice(at..at, chunk);
            }
            _ => bytes.truncate(at),
        }
    }
    bytes
}

fn no_panics(target: &str, run: tbb::fuzz::Target) {
    let seeds = corpus(target);
    let mut rng = ChaCha8Rng::seed_from_u64(20_261_226);
    let mut failures = Vec::new();
    for (name, seed) in &seeds {
        // A seed the reader refuses would test only its first check.
        assert!(
            catch_unwind(AssertUnwindSafe(|| run(seed))).unwrap_or(false),
            "{target} refuses its seed {name}"
        );
        let mut cases = vec![seed.clone()];
        cases.extend((0..MUTANTS_PER_SEED).map(|_| mutate(seed, &mut rng)));
        for (i, case) in cases.iter().enumerate() {
            if catch_unwind(AssertUnwindSafe(|| run(case))).is_err() {
                failures.push(format!(
                    "{name} case {i}: {:?}",
                    String::from_utf8_lossy(&case[..case.len().min(300)])
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{target} panicked on {} input(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_fuzz_target_survives_its_corpus_and_its_mutants() {
    for (target, run) in tbb::fuzz::TARGETS {
        no_panics(target, run);
    }
}
