//! Benchmark of one simulated episode at V = 128 end to end (compile excluded;
//! tokenizer, agent, harness, sandbox and grading included), over the panel and the core
//! families. Run with `cargo bench --bench sim`.

use std::path::Path;
use std::time::{Duration, Instant};

use tbb::compile::{compile, Cell, Encoding, Workflow};
use tbb::family::{FamilySet, Split};
use tbb::harness::{run_episode, EpisodeSpec, Prompts};
use tbb::provider::{build, Catalogue, ProviderKind};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (Ok(set), Ok(prompts), Ok(catalogue)) = (
        FamilySet::load(&root.join("families")),
        Prompts::load(&root.join("prompts")),
        Catalogue::load(&root.join("manifests/configurations.toml")),
    ) else {
        eprintln!("cannot load families, prompts or the catalogue");
        std::process::exit(2)
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::process::exit(2)
    };
    let variants: Vec<_> = set
        .split(Split::Core)
        .filter_map(|f| compile(f, &Cell::new(128, Workflow::High, Encoding::Linked)).ok())
        .collect();
    let mut times: Vec<Duration> = Vec::new();
    // One warm-up pass loads the tokenizer and fills the schema-count memo, as a long
    // run would have done after its first episode.
    for warm in [true, false] {
        for config in catalogue
            .configurations
            .iter()
            .filter(|c| c.provider == ProviderKind::Sim)
        {
            let Ok(provider) = build(config) else {
                continue;
            };
            for v in &variants {
                let start = Instant::now();
                let _ = rt.block_on(run_episode(
                    provider.as_ref(),
                    &EpisodeSpec::frozen(v, config),
                    &prompts,
                    None,
                ));
                if !warm {
                    times.push(start.elapsed());
                }
            }
        }
    }
    times.sort();
    let median = times[times.len() / 2];
    let p90 = times[times.len() * 9 / 10];
    println!(
        "sim episode at V=128 (w=high, d=linked), end to end: median {:.2} ms, p90 {:.2} ms over {} episodes",
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3,
        times.len()
    );
}
