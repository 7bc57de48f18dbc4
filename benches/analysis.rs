//! Benchmark of the capacity analysis's bootstraps (issue 5 target: the eight
//! contrasts × 10,000 draws × 3 cluster units on a full panel in under 100 ms,
//! single-threaded, release; and at least 3× faster than the same bootstraps
//! vectorised in numpy, `benches/bootstrap_numpy.py`, run from here on the same rows).
//!
//! The input is a synthetic but realistic full panel, generated deterministically:
//! 36 families in 12 intents (4 domains), 21 configurations in 7 organizations, the
//! 12 capacity cells, routed lane, one repeat: 9,072 episodes. Success comes from a
//! small mechanism per configuration (baseline, truncation propensity growing with the
//! menu, a workflow sensitivity of either sign, a compact-encoding penalty) and a
//! difficulty per family; truncated episodes fail.
//!
//! Timed phases (median and minimum of the rounds):
//! * prepare: rows -> capacity strata -> unit × cell means -> the eight unit-value
//!   vectors;
//! * bootstrap: for family, intent and configuration clusters, the eight bootstraps
//!   (per-cluster totals, 10,000 draws each from its own ChaCha8 stream, the 95%
//!   percentile interval, the centered p, Holm over the eight);
//! * and, for information, the whole `contrasts` analysis (both weightings, exact
//!   sign-flip tests, per-configuration bootstraps, tables) and the other four.
//!
//! The numpy script runs on the same rows (a CSV file in the system temp directory):
//! once for its own figures, then in rounds paired with Rust rounds, one after the
//! other, so that each ratio compares the two under the same machine load; the
//! reported ratio is the median over the pairs. If `python3` with numpy is missing,
//! the comparison is skipped with a note. The point estimates of the two must agree
//! exactly (the random streams differ, so the intervals agree up to Monte Carlo error).
//!
//! Run with `cargo bench --bench analysis`; the figures go into BENCHMARKS.md.

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use tbb::analysis::capacity::contrasts::{self, ContrastResult, Weighting};
use tbb::analysis::capacity::{costs, lanes, strata, truncation};
use tbb::analysis::common::design::{self, CELLS};
use tbb::analysis::common::stats;
use tbb::analysis::{Bootstrap, ClusterUnit};
use tbb::tables::levels::{
    Actor, Delivery, Domain, Encoding, Menu, PromptVariant, Routing, StopReason, TerminalFlag,
    Workflow,
};
use tbb::tables::rows::EpisodeRow;

const ROUNDS: usize = 15;
/// Paired Rust/numpy rounds for the ratio.
const PAIRS: usize = 9;
const DRAWS: u32 = 10_000;
const SEED: u64 = 20_261_202;
const UNITS: [ClusterUnit; 3] = [
    ClusterUnit::Family,
    ClusterUnit::Intent,
    ClusterUnit::Configuration,
];

/// One simulated configuration's mechanism.
struct Mechanism {
    name: String,
    organization: String,
    base: f64,
    truncation_128: f64,
    workflow: f64,
}

fn panel() -> Vec<EpisodeRow> {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let domains = [
        Domain::Accounting,
        Domain::Email,
        Domain::File,
        Domain::Calendar,
    ];
    let orgs = [
        "aurora", "basalt", "cirrus", "dunlin", "ember", "fjord", "gale",
    ];
    let mut configs = Vec::new();
    for (o, org) in orgs.iter().enumerate() {
        for k in 0..3 {
            let i = o * 3 + k;
            // 6 truncation-heavy, 5 mild, 10 (almost) never truncating.
            let truncation_128 = match i % 7 {
                0 | 3 => 0.3 + 0.4 * rng.random::<f64>(),
                1 | 5 => 0.05 + 0.1 * rng.random::<f64>(),
                _ => 0.01 * rng.random::<f64>(),
            };
            configs.push(Mechanism {
                name: format!("sim-{org}-{k}"),
                organization: org.to_string(),
                base: 0.7 + 0.27 * rng.random::<f64>(),
                truncation_128,
                workflow: 0.6 * rng.random::<f64>() - 0.3,
            });
        }
    }
    let difficulty: Vec<f64> = (0..36).map(|_| -0.1 + 0.15 * rng.random::<f64>()).collect();
    let mut rows = Vec::with_capacity(36 * 12 * 21);
    for c in &configs {
        for (f, delta) in difficulty.iter().enumerate() {
            let intent = f / 3;
            for cell in &CELLS {
                let t = match cell.v {
                    8 => c.truncation_128 * 0.1,
                    32 => c.truncation_128 * 0.35,
                    _ => c.truncation_128,
                };
                let truncated = rng.random::<f64>() < t;
                let w = match cell.w {
                    Workflow::High => c.workflow / 2.0,
                    Workflow::Medium => c.workflow / 4.0,
                    Workflow::Low => 0.0,
                };
                let p = (c.base + delta + w
                    - if cell.d == Encoding::Compact {
                        0.04
                    } else {
                        0.0
                    }
                    - if cell.v == 128 { 0.02 } else { 0.0 })
                .clamp(0.01, 0.995);
                let vts = !truncated && rng.random::<f64>() < p;
                let requests = if truncated {
                    1
                } else {
                    3 + (rng.random::<u32>() % 4)
                };
                let prompt = u64::from(requests) * (700 + 95 * u64::from(cell.v));
                let completion = u64::from(requests) * 150 + if truncated { 1024 } else { 0 };
                rows.push(EpisodeRow {
                    study: "bench".into(),
                    configuration: c.name.clone().into(),
                    organization: c.organization.clone().into(),
                    model: c.name.clone().into(),
                    route: "sim".into(),
                    quantization: None,
                    reasoning_effort: None,
                    lane: Menu::Routed,
                    repair: PromptVariant::Base,
                    block: "main".into(),
                    arm: "routed".into(),
                    delivery: Delivery::Native,
                    actor: Actor::Model,
                    schedule: "routed".into(),
                    schedule_position: None,
                    completion_cap: 1024,
                    repeat: 0,
                    variant_id: format!("f{f:02}-{}-{}-{}", cell.v, cell.w, cell.d).into(),
                    family: format!("family-{f:02}").into(),
                    intent: format!("intent-{intent:02}").into(),
                    domain: domains[intent % 4],
                    v: cell.v,
                    w: cell.w,
                    d: cell.d,
                    r: Routing::Low,
                    depth: None,
                    vts,
                    ok: [
                        !truncated, !truncated, vts, vts, vts, vts, vts, vts, !truncated,
                    ],
                    first_unmet: None,
                    terminal_flag: truncated.then_some(TerminalFlag::Truncation),
                    truncated,
                    truncated_before_first_call: truncated && rng.random::<f64>() < 0.95,
                    calls: if truncated { 0 } else { requests - 1 },
                    calls_by_controller: 0,
                    requests,
                    // Routed: the full menu first, then six operational tools.
                    schema_exposures: u64::from(cell.v)
                        + u64::from(requests - 1) * u64::from(cell.v.min(6)),
                    turns: requests,
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    reasoning_tokens: 0,
                    total_tokens: prompt + completion,
                    cost_usd: (prompt as f64 * 0.4 + completion as f64 * 1.6) / 1e6,
                    wall_ms: 0,
                    infra_failure: false,
                    infra_error: None,
                    infra_http_status: None,
                    infra_attempts: None,
                    sent_temperature: Some(0.0),
                    sent_seed: Some(1),
                    sent_parallel_tool_calls: Some(false),
                    stop_reason: if truncated {
                        StopReason::Truncated
                    } else {
                        StopReason::Answer
                    },
                    episode_key: tbb::tables::HexKey::from([0; 32]),
                    transcript_ref: "".into(),
                    node_key: "".into(),
                    attempt: 1,
                });
            }
        }
    }
    rows
}

fn write_csv(rows: &[EpisodeRow], path: &Path) -> std::io::Result<()> {
    let mut s = String::from("family,intent,domain,configuration,organization,v,w,d,vts\n");
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            r.family,
            r.intent,
            r.domain,
            r.configuration,
            r.organization,
            r.v,
            r.w,
            r.d,
            u8::from(design::success(r))
        ));
    }
    std::fs::write(path, s)
}

fn median(t: &[Duration]) -> f64 {
    let mut t = t.to_vec();
    t.sort();
    t[t.len() / 2].as_secs_f64() * 1e3
}

fn least(t: &[Duration]) -> f64 {
    t.iter().min().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

fn median_f(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("{e}");
    std::process::exit(2)
}

/// One timed round: (prepare, bootstrap) times and the 24 results.
fn rust_round(rows: &[EpisodeRow]) -> (Duration, Duration, Vec<ContrastResult>) {
    let start = Instant::now();
    let strata = design::capacity_rows(rows);
    let (stratum, cell_rows) = strata
        .iter()
        .next()
        .unwrap_or_else(|| fail("no capacity rows"));
    let means = design::cell_means("contrasts", stratum, cell_rows).unwrap_or_else(|e| fail(e));
    let diffs = contrasts::unit_differences(&means);
    let prepared = Instant::now();
    let results =
        contrasts::bootstrap_contrasts(&means, &diffs, Weighting::Unit, &UNITS, DRAWS, SEED);
    let done = Instant::now();
    (prepared - start, done - prepared, results)
}

/// Runs the numpy script on the rows: `rounds` timed rounds after one warm-up.
fn numpy(csv: &Path, rounds: usize) -> Result<serde_json::Value, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/bootstrap_numpy.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(csv)
        .args([
            "--draws",
            &DRAWS.to_string(),
            "--rounds",
            &rounds.to_string(),
            "--seed",
            &SEED.to_string(),
        ])
        // One thread for numpy too.
        .env("OMP_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("MKL_NUM_THREADS", "1")
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`pip install numpy`? {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("no JSON from the script: {e}"))
}

fn main() {
    let rows = panel();
    let analysis = Bootstrap {
        draws: Some(DRAWS),
        seed: Some(SEED),
        cluster_units: UNITS.to_vec(),
    };

    let (mut prepare, mut boot, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    let mut results = Vec::new();
    for _ in 0..ROUNDS {
        let (p, b, r) = rust_round(&rows);
        prepare.push(p);
        boot.push(b);
        whole.push(p + b);
        results = r;
    }
    // Breakdown of the bootstrap phase: the 24 streams of draws alone; the rest
    // (cluster totals, interval, p, Holm) is the difference.
    let strata_map = design::capacity_rows(&rows);
    let (stratum, cell_rows) = strata_map
        .iter()
        .next()
        .unwrap_or_else(|| fail("no capacity rows"));
    let means = design::cell_means("contrasts", stratum, cell_rows).unwrap_or_else(|e| fail(e));
    let diffs = contrasts::unit_differences(&means);
    let ones = vec![1.0; means.units.len()];
    let totals: Vec<stats::ClusterTotals> = UNITS
        .iter()
        .flat_map(|&unit| {
            let keys: Vec<&str> = means.units.iter().map(|u| u.cluster(unit)).collect();
            let (clusters, names) = stats::cluster_ids(&keys);
            diffs
                .iter()
                .map(|d| stats::ClusterTotals::new(d, &ones, &clusters, names.len()))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut draw_times = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for (k, t) in totals.iter().enumerate() {
            std::hint::black_box(stats::bootstrap_draws(t, DRAWS, k as u64));
        }
        draw_times.push(start.elapsed());
    }
    let mut full = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let out = contrasts::run(&analysis, &rows).unwrap_or_else(|e| fail(e));
        full.push(start.elapsed());
        std::hint::black_box(out);
    }
    let mut others = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let t = truncation::run(&rows).unwrap_or_else(|e| fail(e));
        let s = strata::run(&rows).unwrap_or_else(|e| fail(e));
        let c = costs::run(&rows).unwrap_or_else(|e| fail(e));
        others.push(start.elapsed());
        std::hint::black_box((t, s, c));
    }
    // The lanes analysis needs a fixed lane: a copy of the panel with one.
    let mut both = rows.clone();
    both.extend(rows.iter().map(|r| EpisodeRow {
        lane: Menu::Fixed,
        schema_exposures: u64::from(r.requests) * u64::from(r.v),
        ..r.clone()
    }));
    let mut lane_times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let l = lanes::run(&analysis, &both).unwrap_or_else(|e| fail(e));
        lane_times.push(start.elapsed());
        std::hint::black_box(l);
    }

    println!(
        "{} routed episodes (36 families, 12 intents, 21 configurations, 12 cells)",
        rows.len()
    );
    println!("Rust, single-threaded, {ROUNDS} rounds, median (minimum):");
    println!(
        "  prepare (rows -> unit values):                       {:7.2} ms ({:.2})",
        median(&prepare),
        least(&prepare)
    );
    println!(
        "  8 contrasts x {DRAWS} draws x 3 units (+ CI, p, Holm): {:7.2} ms ({:.2})",
        median(&boot),
        least(&boot)
    );
    println!(
        "  both:                                                {:7.2} ms ({:.2})",
        median(&whole),
        least(&whole)
    );
    println!(
        "  of which the 24 x {DRAWS} draws alone:                  {:7.2} ms ({:.2})",
        median(&draw_times),
        least(&draw_times)
    );
    println!(
        "  whole contrasts analysis (2 weightings, sign flips, per-configuration, tables): {:.1} ms (median of 5)",
        median(&full)
    );
    println!(
        "  truncation + strata + costs analyses: {:.1} ms; lanes (18,144 rows, 4 scopes x 3 units): {:.1} ms (medians of 5)",
        median(&others),
        median(&lane_times)
    );
    println!("family-cluster rows:");
    for r in results
        .iter()
        .filter(|r| r.cluster_unit == ClusterUnit::Family)
    {
        println!(
            "  {:<10} {:>7.2} pp [{:>7.2}, {:>7.2}]  p={:.4}  Holm p={:.4}",
            r.contrast.name(),
            r.interval.estimate,
            r.interval.low,
            r.interval.high,
            r.interval.p_value,
            r.p_holm
        );
    }

    let csv = std::env::temp_dir().join("tbb-analysis-bench-rows.csv");
    if let Err(e) = write_csv(&rows, &csv) {
        fail(format!("cannot write {}: {e}", csv.display()));
    }
    let report = match numpy(&csv, ROUNDS) {
        Ok(r) => r,
        Err(e) => {
            println!("numpy comparison skipped: {e}");
            return;
        }
    };
    let ms = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "numpy {} (same rows, same bootstraps, {ROUNDS} rounds, median (minimum)):",
        report["numpy"].as_str().unwrap_or("?")
    );
    for (label, key) in [
        ("prepare:  ", "prepare"),
        ("bootstrap:", "bootstrap"),
        ("both:     ", "total"),
    ] {
        println!(
            "  {label} {:7.2} ms ({:.2})",
            ms(&report, &format!("{key}_ms")),
            ms(&report, &format!("{key}_min_ms"))
        );
    }
    // The point estimates do not depend on the random streams: they must agree.
    let mut worst: f64 = 0.0;
    for r in &results {
        let key = format!("{}/{}", r.cluster_unit.name(), r.contrast.name());
        let theirs = report["estimates"][&key].as_f64().unwrap_or(f64::NAN);
        worst = worst.max((theirs - r.interval.estimate).abs());
    }
    println!("largest difference between the Rust and numpy point estimates: {worst:.2e} pp");
    if worst.is_nan() || worst > 1e-9 {
        fail("the numpy script computes other contrasts than the Rust code");
    }

    // Paired rounds: one Rust round, then one numpy round (after its warm-up), so that
    // both sides of each ratio ran under the same machine load.
    let (mut boot_ratio, mut both_ratio) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let (p, b, _) = rust_round(&rows);
        let r = numpy(&csv, 1).unwrap_or_else(|e| fail(e));
        boot_ratio.push(ms(&r, "bootstrap_ms") / (b.as_secs_f64() * 1e3));
        both_ratio.push(ms(&r, "total_ms") / ((p + b).as_secs_f64() * 1e3));
    }
    println!(
        "numpy / Rust, median over {PAIRS} paired rounds: bootstrap {:.1}x, both phases {:.1}x",
        median_f(boot_ratio),
        median_f(both_ratio)
    );
}
