#![cfg_attr(not(test), allow(dead_code, unused_imports))]
use super::*;
use crate::common::design::testing::row;

fn params() -> Params {
    Params {
        probe: "probe".into(),
        retry_repeat: Some(1),
        actions: vec!["fixit".into()],
        switch: "sw".into(),
        draws: Some(200),
        seed: Some(3),
    }
}

/// One block of configuration `c`, family `f` (intent `i`): the probe (with `calls`),
/// the retry, the `fixit` arm and the switch, with the given successes and the probe
/// costing 0.001, every action 0.002.
fn block(f: &str, i: &str, calls: u32, ok: [bool; 4]) -> Vec<EpisodeRow> {
    let mut out = Vec::new();
    for (k, (configuration, arm, repeat)) in [
        ("c", "probe", 0),
        ("c", "probe", 1),
        ("c", "fixit", 0),
        ("sw", "probe", 0),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = row(configuration, "O", f, i, 128, "high", "linked", ok[k]);
        r.arm = arm.into();
        r.repeat = repeat;
        r.cost_usd = if k == 0 { 0.001 } else { 0.002 };
        if k == 0 {
            r.calls = calls;
        }
        out.push(r);
    }
    out
}

#[test]
fn blocks_need_every_action_and_two_rows_for_one_condition_are_an_error() {
    let mut eps = block("f1", "i1", 0, [true; 4]);
    let mut partial = block("f2", "i1", 0, [true; 4]);
    partial.remove(2); // no `fixit` episode: the block is left out
    eps.extend(partial);
    let b = blocks(&eps, &params()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].probe.family, "f1");
    // The switch's own probe is not a block.
    assert!(b.iter().all(|x| x.probe.configuration == "c"));
    let twice: Vec<EpisodeRow> = eps.iter().chain(eps.iter().take(1)).cloned().collect();
    assert!(blocks(&twice, &params()).is_err());
}

/// Four blocks: the probe fails everywhere; on the two with 0 calls only `fixit`
/// rescues, on the two with 5 calls only the retry does; the switch rescues one.
pub fn panel() -> Vec<EpisodeRow> {
    let mut eps = Vec::new();
    eps.extend(block("f1", "i1", 0, [false, false, true, true]));
    eps.extend(block("f2", "i2", 0, [false, false, true, false]));
    eps.extend(block("f3", "i3", 5, [false, true, false, false]));
    eps.extend(block("f4", "i4", 5, [false, true, false, false]));
    eps
}

#[test]
fn the_depth_one_tree_by_hand() {
    let eps = panel();
    let b = blocks(&eps, &params()).unwrap_or_else(|e| panic!("{e}"));
    let all: Vec<&Block<'_>> = b.iter().collect();
    // A single action scores 2 (retry and fixit tie → the retry); the token counts do
    // not vary, so the first split is on calls at (0 + 5) / 2: fixit at or below,
    // the retry above, 4 successes.
    let rule = fit("none", &all);
    assert_eq!(
        rule.feature.map(|f| FEATURES[f].0),
        Some(ProbeFeature::Calls)
    );
    assert_eq!(rule.threshold, 2.5);
    assert_eq!((rule.low, rule.high, rule.training_successes), (1, 0, 4));
    // Held out one intent at a time: without i1 the 0-call side has one block (f2),
    // where fixit wins; so every block gets its rescuing action.
    let s = select(&b);
    assert_eq!(s.chosen, [1, 1, 0, 0]);
    // With nothing to split on, the single best action (ties to the earlier).
    let same: Vec<&Block<'_>> = vec![&b[0], &b[1]];
    let r = fit("x", &same);
    assert_eq!((r.feature, r.low, r.training_successes), (None, 1, 2));
}

#[test]
fn successes_policies_and_costs_by_hand_with_the_probe_charged_once() {
    let eps = panel();
    let p = params();
    let b = blocks(&eps, &p).unwrap_or_else(|e| panic!("{e}"));
    let rows = rows(&b, &select(&b), &action_names(&p), 200, 3);
    let get = |a: &str| {
        rows.iter()
            .find(|r| r.action == a)
            .unwrap_or_else(|| panic!("{a}"))
    };
    let retry = get("retry");
    assert_eq!(
        (retry.success, retry.success_after_failed_probe),
        (0.5, Some(0.5))
    );
    // Every probe failed, so the policy is the action.
    assert_eq!(retry.policy_success, 0.5);
    // Probe 0.001 + action 0.002 per condition → USD 3 per 1,000; the action alone 2;
    // the policy acts after every (failed) probe → 3.
    assert!((retry.cost_per_1000_usd - 3.0).abs() < 1e-9);
    assert!((retry.action_cost_per_1000_usd - 2.0).abs() < 1e-9);
    assert!((retry.policy_cost_per_1000_usd - 3.0).abs() < 1e-9);
    let probe = get("probe");
    assert!((probe.cost_per_1000_usd - 1.0).abs() < 1e-9);
    assert_eq!(get("switch").success, 0.25);
    let selector = get("trace_selector");
    assert_eq!(selector.success, 1.0);
    // The selector rescues all four, the switch one: +75 pp.
    let bound = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let (d, lo, hi) = (
        bound(selector.vs_switch_pp),
        bound(selector.vs_switch_ci_low_pp),
        bound(selector.vs_switch_ci_high_pp),
    );
    // Only the selector's row compares with the switch.
    assert!(rows
        .iter()
        .all(|r| (r.action == "trace_selector") == r.vs_switch_pp.is_some()));
    assert!((d - 75.0).abs() < 1e-9);
    assert!(lo <= d && d <= hi);
}

#[test]
fn a_successful_probe_is_kept_by_the_policy_and_its_action_not_paid() {
    let mut eps = panel();
    eps.extend(block("f5", "i5", 0, [true, false, false, false]));
    let p = params();
    let b = blocks(&eps, &p).unwrap_or_else(|e| panic!("{e}"));
    let rows = rows(&b, &select(&b), &action_names(&p), 200, 3);
    let switch = rows
        .iter()
        .find(|r| r.action == "switch")
        .unwrap_or_else(|| panic!());
    // Five blocks, four failed probes; the switch rescues one of them, and the kept
    // probe counts for the policy: 2 of 5.
    assert_eq!(switch.n_failed_probe, 4);
    assert_eq!(switch.success_after_failed_probe, Some(0.25));
    assert!((switch.policy_success - 0.4).abs() < 1e-12);
    // The policy pays the action after the four failures only: 1 + 4/5 × 2.
    assert!((switch.policy_cost_per_1000_usd - 2.6).abs() < 1e-9);
}
