//! Benchmark of one simulated episode end to end (compile excluded; tokenizer, agent,
//! harness, sandbox and grading included), over the panel: at V = 128 on the core
//! families, and at 30 required calls on the frontier families, the model issuing
//! every call and the public-handoff controller issuing the hand-offs. Run with
//! `cargo bench --bench sim`.

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use tbb::compile::{compile, Cell, Encoding, Variant, Workflow};
use tbb::family::{FamilySet, Split};
use tbb::harness::{run_episode, Actor, ArmForm, EpisodeSpec, Menu, Prompts};
use tbb::provider::{build, Catalogue, Configuration, ProviderKind};

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
    let sims: Vec<&Configuration> = catalogue
        .configurations
        .iter()
        .filter(|c| c.provider == ProviderKind::Sim)
        .collect();
    let run = |label: &str, variants: &[Variant], arm: ArmForm| {
        let mut times: Vec<Duration> = Vec::new();
        let mut requests = 0usize;
        // One warm-up pass loads the tokenizer and fills the schema-count memo, as a
        // long run would have done after its first episode.
        for warm in [true, false] {
            for config in &sims {
                let Ok(provider) = build(config) else {
                    continue;
                };
                for v in variants {
                    let spec = EpisodeSpec {
                        arm,
                        ..EpisodeSpec::frozen(v, config)
                    };
                    let start = Instant::now();
                    let episode =
                        rt.block_on(run_episode(provider.as_ref(), &spec, &prompts, None));
                    if !warm {
                        times.push(start.elapsed());
                        requests += episode.trace.turns.len();
                    }
                }
            }
        }
        times.sort();
        if times.is_empty() {
            eprintln!("{label}: no episode ran");
            return;
        }
        println!(
            "{label}: median {:.2} ms, p90 {:.2} ms over {} episodes ({:.1} requests each)",
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[times.len() * 9 / 10].as_secs_f64() * 1e3,
            times.len(),
            requests as f64 / times.len() as f64,
        );
    };
    let compiled = |split: Split, cell: Cell| -> Vec<Variant> {
        set.split(split)
            .filter_map(|f| compile(f, &cell).ok())
            .collect()
    };
    run(
        "sim episode at V=128 (w=high, d=linked), end to end",
        &compiled(
            Split::Core,
            Cell::new(128, Workflow::High, Encoding::Linked),
        ),
        ArmForm::baseline(),
    );
    let deep = compiled(Split::Frontier, Cell::frontier(30));
    run(
        "sim episode at 30 required calls (frontier, model-run)",
        &deep,
        ArmForm::baseline(),
    );
    run(
        "sim episode at 30 required calls (frontier, the controller)",
        &deep,
        ArmForm {
            menu: Menu::Fixed,
            actor: Actor::Controller,
            ..ArmForm::baseline()
        },
    );
}
