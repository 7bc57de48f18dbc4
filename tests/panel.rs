//! The built-in simulated panel over the capacity factorial, through the real harness:
//! outcomes are varied and come out of the agents' mechanisms — successes, truncations
//! (more at V = 128 than at V = 8), call-limit and turn-limit endings, infeasibility
//! stops and wrong conclusions — and every episode is reproducible.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use tbb::compile::{compile, Cell, Variant};
use tbb::family::{FamilySet, Split};
use tbb::grade::TerminalFlag;
use tbb::harness::{run_episode, Episode, EpisodeSpec, Prompts};
use tbb::provider::{build, Catalogue, ProviderKind};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every core family at every capacity cell.
fn variants() -> Vec<Variant> {
    let set = FamilySet::load(&root().join("families")).expect("families load");
    set.split(Split::Core)
        .flat_map(|f| {
            Cell::capacity()
                .into_iter()
                .map(move |c| compile(f, &c).expect("compiles"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sim_panel_gives_varied_mechanism_driven_outcomes() {
    let catalogue =
        Catalogue::load(&root().join("manifests/configurations.toml")).expect("catalogue");
    let prompts = Prompts::load(&root().join("prompts")).expect("prompts");
    let panel: Vec<_> = catalogue
        .configurations
        .iter()
        .filter(|c| c.provider == ProviderKind::Sim && c.enabled)
        .collect();
    let organizations: BTreeSet<&str> = panel.iter().map(|c| c.organization.as_str()).collect();
    assert!(
        panel.len() >= 21 && organizations.len() >= 7,
        "{} configurations, {} organizations",
        panel.len(),
        organizations.len()
    );
    let variants = variants();
    let mut flags: BTreeMap<Option<TerminalFlag>, usize> = BTreeMap::new();
    let mut truncated_at: BTreeMap<u16, (usize, usize)> = BTreeMap::new();
    let mut never_truncating = 0;
    for config in &panel {
        let provider = build(config).expect("sim builds");
        let mut truncations = 0;
        for v in &variants {
            let e: Episode = run_episode(
                provider.as_ref(),
                &EpisodeSpec::frozen(v, config),
                &prompts,
                None,
            )
            .await;
            *flags.entry(e.verdict.terminal_flag).or_default() += 1;
            let t = truncated_at.entry(v.cell.v).or_default();
            t.0 += usize::from(e.verdict.truncated);
            t.1 += 1;
            truncations += usize::from(e.verdict.truncated);
        }
        never_truncating += usize::from(truncations == 0);
    }
    let count = |f: Option<TerminalFlag>| flags.get(&f).copied().unwrap_or(0);
    let summary = format!("{flags:?}; truncated by V: {truncated_at:?}");
    assert!(count(None) > 0, "no success: {summary}");
    for flag in [
        TerminalFlag::Truncation,
        TerminalFlag::BudgetOrCallLimit,
        TerminalFlag::TurnLimit,
        TerminalFlag::Infeasibility,
        TerminalFlag::WrongConclusion,
    ] {
        assert!(count(Some(flag)) > 0, "no {flag:?} ending: {summary}");
    }
    let share = |v: u16| {
        truncated_at
            .get(&v)
            .map_or(0.0, |(t, n)| *t as f64 / *n as f64)
    };
    assert!(
        share(128) > 2.0 * share(8),
        "truncation does not grow with the menu: {summary}"
    );
    assert!(
        never_truncating > 0,
        "every configuration truncates: {summary}"
    );
}

#[tokio::test]
async fn a_sim_episode_is_reproducible() {
    let catalogue =
        Catalogue::load(&root().join("manifests/configurations.toml")).expect("catalogue");
    let prompts = Prompts::load(&root().join("prompts")).expect("prompts");
    let variants = variants();
    for config in catalogue
        .configurations
        .iter()
        .filter(|c| c.provider == ProviderKind::Sim)
        .take(5)
    {
        let provider = build(config).expect("sim builds");
        for v in variants.iter().step_by(7) {
            let spec = EpisodeSpec::frozen(v, config);
            let a = run_episode(provider.as_ref(), &spec, &prompts, None).await;
            let b = run_episode(provider.as_ref(), &spec, &prompts, None).await;
            assert_eq!(
                serde_json::to_string(&a.transcript.requests).ok(),
                serde_json::to_string(&b.transcript.requests).ok()
            );
            assert_eq!(a.verdict, b.verdict);
            assert_eq!(a.trace.turns.len(), b.trace.turns.len());
            for (x, y) in a.trace.turns.iter().zip(&b.trace.turns) {
                assert_eq!(
                    (&x.response.raw, &x.response.usage, &x.executed),
                    (&y.response.raw, &y.response.usage, &y.executed)
                );
            }
        }
    }
}
