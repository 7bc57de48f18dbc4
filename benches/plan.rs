//! Benchmark of `tbb plan manifests/capacity.toml` with everything cached, phase by
//! phase (families, manifest and DAG; cache index; plan), on a cache an apply of the
//! capacity study wrote. Run with `cargo bench --bench plan -- OUTPUTS_ROOT`, after
//! `tbb --outputs OUTPUTS_ROOT apply manifests/capacity.toml`; the whole command is
//! timed by `benches/pipeline.sh`.

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use tbb::pipeline::{Paths, Study};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(outputs) = std::env::args().skip(1).find(|a| !a.starts_with('-')) else {
        eprintln!("usage: cargo bench --bench plan -- OUTPUTS_ROOT");
        std::process::exit(2)
    };
    let paths = Paths {
        families: root.join("families"),
        prompts: root.join("prompts"),
        outputs: PathBuf::from(outputs),
        lockfiles: std::env::temp_dir().join("tbb-bench-lockfiles"),
        cache: None,
    };
    let manifest = root.join("manifests/capacity.toml");
    let mut best = [f64::MAX; 4];
    for _ in 0..5 {
        let t0 = Instant::now();
        let study = match Study::load(&manifest, &[], &paths) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        };
        let t1 = Instant::now();
        let cache = match study.cache() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        };
        let t2 = Instant::now();
        let plan = match study.plan(&cache) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        };
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        for (i, v) in [ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t0, t3)]
            .into_iter()
            .enumerate()
        {
            best[i] = best[i].min(v);
        }
        if !plan.is_empty() {
            eprintln!("note: {}", plan.summary());
        }
    }
    println!(
        "plan capacity (best of 5): load+DAG {:.0} ms, cache index {:.0} ms, plan {:.0} ms, total {:.0} ms",
        best[0], best[1], best[2], best[3]
    );
}
