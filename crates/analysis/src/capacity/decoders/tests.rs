#![cfg_attr(not(test), allow(dead_code, unused_imports))]
use super::*;
use crate::common::design::testing::row;

/// The four rows of a packet: baseline, V, W, D, with the given successes.
pub fn packet(configuration: &str, family: &str, intent: &str, ok: [bool; 4]) -> Vec<EpisodeRow> {
    std::iter::once(BASELINE)
        .chain(STRESSED)
        .zip(ok)
        .map(|((v, w, d), vts)| {
            let mut r = row(
                configuration,
                "O",
                family,
                intent,
                v,
                w.name(),
                d.name(),
                vts,
            );
            if !vts {
                r.first_unmet = Some(Obligation::P);
                r.terminal_flag = Some(TerminalFlag::WrongConclusion);
            }
            r
        })
        .collect()
}

#[test]
fn packets_are_selected_and_exclusions_counted() {
    let mut rows = Vec::new();
    rows.extend(packet("c", "f1", "i1", [true, false, true, true])); // V
    rows.extend(packet("c", "f2", "i1", [true, true, true, false])); // D
    rows.extend(packet("c", "f3", "i2", [true, false, false, true])); // two failures
    rows.extend(packet("c", "f4", "i2", [false, false, true, true])); // baseline fails
    rows.extend(packet("c", "f5", "i3", [true, true, true, true])); // no failure
    let mut infra = packet("c", "f6", "i3", [true, true, false, true]);
    infra[2].infra_failure = true;
    rows.extend(infra);
    let mut incomplete = packet("c", "f7", "i3", [true, false, true, true]);
    incomplete.pop();
    rows.extend(incomplete);
    // Another lane, and another cap, are not read.
    let mut fixed = packet("c", "f8", "i3", [true, false, true, true]);
    for r in &mut fixed {
        r.lane = Menu::Fixed;
    }
    rows.extend(fixed);
    let p = packets(&rows, Menu::Routed, 1024);
    let labels: Vec<(&str, usize)> = p
        .labelled
        .iter()
        .map(|x| (x.row.family.as_str(), x.label))
        .collect();
    assert_eq!(labels, [("f1", 0), ("f2", 2)]);
    assert_eq!(p.labelled[0].row.v, 128);
    assert_eq!(
        (
            p.n_multi,
            p.n_infra,
            p.n_baseline_failed,
            p.n_no_failure,
            p.n_incomplete
        ),
        (1, 1, 1, 1, 1)
    );
    let multi: Vec<usize> = p.multi.iter().map(|x| x.label).collect();
    assert_eq!(multi, [0, 1]);
}

#[test]
fn the_lookup_table_takes_the_majority_ties_in_order_and_the_prior_for_unseen_tuples() {
    let t = fit([("a", 1), ("a", 0), ("b", 2), ("b", 1), ("b", 2), ("c", 2)]);
    // "a": V and W tie → V; "b": D twice → D; the prior: V 1, W 2, D 3 → D.
    assert_eq!(predict(&t, "a"), 0);
    assert_eq!(predict(&t, "b"), 2);
    assert_eq!(t.prior, 2);
    assert_eq!(predict(&t, "never seen"), 2);
    // A tied prior resolves V, W, D too.
    assert_eq!(fit([("x", 2), ("y", 1)]).prior, 1);
}

#[test]
fn out_of_fold_predictions_never_see_their_intent() {
    // Intent i1: tuple "P" labelled V; intent i2: tuple "P" labelled W twice, and
    // tuple "Q" labelled D; intent i3: tuple "Q" labelled D.
    let mut rows = Vec::new();
    for (f, i, unmet, ok) in [
        ("f1", "i1", Obligation::P, [true, false, true, true]),
        ("f2", "i2", Obligation::P, [true, true, false, true]),
        ("f3", "i2", Obligation::P, [true, true, false, true]),
        ("f4", "i2", Obligation::Q, [true, true, true, false]),
        ("f5", "i3", Obligation::Q, [true, true, true, false]),
    ] {
        let mut p = packet("c", f, i, ok);
        for r in &mut p {
            if !r.vts {
                r.first_unmet = Some(unmet);
            }
        }
        rows.extend(p);
    }
    let p = packets(&rows, Menu::Routed, 1024);
    let predicted = out_of_fold(&p.labelled, FEATURE_SETS[0].2);
    // f1 (i1 held out): "P" is W twice in i2 → W. f2, f3, f4 (i2 held out): "P" is V
    // (i1), "Q" is D (i3). f5 (i3 held out): "Q" is D (i2).
    assert_eq!(predicted, [1, 0, 0, 2, 2]);
}

#[test]
fn balanced_accuracy_by_hand() {
    // V: 2 of 3 right, W: 1 of 1, D: 0 of 2 → (2/3 + 1 + 0) / 3.
    let outcomes = [(0, 0), (0, 0), (0, 1), (1, 1), (2, 0), (2, 1)];
    let (ba, recall) = balanced_accuracy(outcomes.iter().map(|&(l, p)| (l, p, 1.0)));
    assert!((ba - 5.0 / 9.0).abs() < 1e-12);
    assert_eq!(recall[1], 1.0);
    // A class without packets is left out of the mean.
    let (ba, recall) = balanced_accuracy([(0, 0, 1.0), (1, 0, 1.0)]);
    assert_eq!(ba, 0.5);
    assert!(recall[2].is_nan());
    // Weights are multiplicities: an intent drawn twice counts twice.
    let (ba, _) = balanced_accuracy([(0, 0, 2.0), (0, 1, 1.0)]);
    assert!((ba - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn the_intent_bootstrap_equals_resampling_the_packets_by_hand() {
    let mut rows = Vec::new();
    for (k, ok) in [
        [true, false, true, true],
        [true, true, false, true],
        [true, true, true, false],
        [true, false, true, true],
        [true, true, false, true],
        [true, false, true, true],
    ]
    .iter()
    .enumerate()
    {
        let mut p = packet("c", &format!("f{k}"), &format!("i{}", k % 3), *ok);
        for r in &mut p {
            if !r.vts && k % 2 == 0 {
                r.terminal_flag = Some(TerminalFlag::Infeasibility);
            }
        }
        rows.extend(p);
    }
    let p = packets(&rows, Menu::Routed, 1024);
    let scores = score(&p.labelled, 50, 11);
    // The slow reference: the same intent draws, materialised as packet lists.
    let intents: Vec<&str> = p
        .labelled
        .iter()
        .map(|x| x.intent)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for (set, score) in FEATURE_SETS.iter().zip(&scores) {
        let predicted = out_of_fold(&p.labelled, set.2);
        let mut again = IndexStream::new(stats::derive_seed(11, &[KIND, "intents"]));
        for draw in &score.draws {
            let mut outcomes = Vec::new();
            for _ in 0..intents.len() {
                let intent = intents[again.index(intents.len() as u32)];
                for (i, x) in p.labelled.iter().enumerate() {
                    if x.intent == intent {
                        outcomes.push((x.label, predicted[i], 1.0));
                    }
                }
            }
            let (want, _) = balanced_accuracy(outcomes);
            assert!(
                (draw - want).abs() < 1e-12 || (draw.is_nan() && want.is_nan()),
                "{:?}: {draw} != {want}",
                set.0
            );
        }
    }
}

#[test]
fn gains_are_paired_and_bonferroni_adjusted() {
    let score = |name: FeatureSet, ba: f64, draws: Vec<f64>| Score {
        name,
        reference: false,
        balanced_accuracy: ba,
        recall: [ba; 3],
        n: [1; 3],
        n_tuples: 1,
        draws,
    };
    let scores = vec![
        score(FeatureSet::FirstUnmet, 0.5, vec![0.0; 101]),
        score(
            FeatureSet::FirstUnmetAndTerminalFlag,
            0.6,
            (0..=100).map(|k| f64::from(k) / 100.0).collect(),
        ),
    ];
    let g = gains(&scores, 101, 9);
    assert_eq!(g.len(), 1, "only the comparisons whose sets are present");
    // Differences 0, 1, ..., 100 pp; the 99% interval's ends are the 0.5% and 99.5%
    // quantiles: positions 0.5 and 99.5.
    let end = |x: Option<f64>| x.unwrap_or(f64::NAN);
    assert!((end(g[0].ci_low_pp) - 0.5).abs() < 1e-9, "{:?}", g[0]);
    assert!((end(g[0].ci_high_pp) - 99.5).abs() < 1e-9, "{:?}", g[0]);
    assert!((g[0].gain_pp - 10.0).abs() < 1e-9);
    assert!((g[0].level - 0.99).abs() < 1e-12);
}

#[test]
fn every_feature_set_leaves_out_configuration_family_and_pressure() {
    // Two rows that differ only in identifiers and cell (and so the pressure) give
    // the same tuple for every diagnostic set.
    let a = row("conf-a", "O", "fam-a", "int-a", 128, "low", "raw", false);
    let b = row("conf-b", "P", "fam-b", "int-b", 8, "high", "linked", false);
    for (name, reads_treatment, features) in FEATURE_SETS {
        if !reads_treatment {
            assert_eq!(features(&a), features(&b), "{name:?}");
        } else {
            assert_ne!(features(&a), features(&b), "{name:?}");
        }
    }
}

/// The menu-size proxy is the failure record with the menu size revealed: two failing
/// rows with the same record differ by their menu size alone, and two with the same
/// menu size by their record.
#[test]
fn the_menu_size_proxy_is_the_record_with_the_menu_size() {
    let proxy = FEATURE_SETS
        .iter()
        .find(|(name, _, _)| *name == FeatureSet::MenuSizeProxy)
        .map(|(_, reads, f)| (*reads, *f));
    let Some((true, proxy)) = proxy else {
        panic!("the proxy reads the treatment")
    };
    let large = row("c", "O", "f", "i", 128, "low", "raw", false);
    let small = row("c", "O", "f", "i", 8, "low", "raw", false);
    let mut other_flag = small.clone();
    other_flag.terminal_flag = Some(TerminalFlag::TurnLimit);
    assert_eq!(
        proxy(&large),
        format!("128|{}|{}", first_unmet(&large), terminal(&large))
    );
    assert_ne!(proxy(&large), proxy(&small));
    assert_ne!(proxy(&small), proxy(&other_flag));
}

/// A study run at one cap other than the frozen one reads its packets at that cap; one
/// of several caps must be named (the manifest refuses the omission at check time).
#[test]
fn the_cap_defaults_to_the_study_s_one_cap() {
    let mut rows = packet("c", "f1", "i1", [true, false, true, true]);
    for r in &mut rows {
        r.completion_cap = 2048;
    }
    assert_eq!(single_cap(&rows).ok(), Some(2048));
    let mut other = rows.clone();
    other[0].completion_cap = 4096;
    rows.extend(other);
    let Err(AnalysisError::MissingData { detail, .. }) = single_cap(&rows) else {
        panic!("two caps and none named")
    };
    assert!(detail.contains("2 completion caps"), "{detail}");
}
