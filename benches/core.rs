//! Benchmark of the pure core: compile the 36 core families at the 12 capacity cells and
//! grade each variant's reference trace (issue target: under 1 s in release on 2 cores).
//!
//! Run with `cargo bench --bench core`; the figures go into BENCHMARKS.md.

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use tbb::compile::{compile, Cell};
use tbb::family::{FamilySet, Split};
use tbb::grade::{grade, reference::reference_trace};

const ROUNDS: usize = 7;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("families");
    let load_start = Instant::now();
    let set = match FamilySet::load(&root) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("{:?}", miette::Report::new(e));
            std::process::exit(2);
        }
    };
    let load = load_start.elapsed();
    let core: Vec<_> = set.split(Split::Core).collect();
    let cells = Cell::capacity();
    let mut compile_times = Vec::new();
    let mut total_times = Vec::new();
    let mut passed = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let mut variants = Vec::with_capacity(core.len() * cells.len());
        for family in &core {
            for cell in &cells {
                match compile(family, cell) {
                    Ok(v) => variants.push(v),
                    Err(e) => {
                        eprintln!("{e}");
                        std::process::exit(2);
                    }
                }
            }
        }
        let compiled = start.elapsed();
        passed = variants
            .iter()
            .filter(|v| grade(v, &reference_trace(v)).vts)
            .count();
        total_times.push(start.elapsed());
        compile_times.push(compiled);
    }
    let median = |mut t: Vec<Duration>| {
        t.sort();
        t[t.len() / 2]
    };
    println!("families loaded in {:.1} ms", load.as_secs_f64() * 1e3);
    println!(
        "{} variants (36 core families x 12 capacity cells), {passed} reference traces VTS",
        core.len() * cells.len()
    );
    println!(
        "compile: median {:.1} ms over {ROUNDS} rounds",
        median(compile_times).as_secs_f64() * 1e3
    );
    println!(
        "compile + reference trace + grade: median {:.1} ms over {ROUNDS} rounds",
        median(total_times).as_secs_f64() * 1e3
    );
}
