//! The `repairs` analysis on hand-built episodes.
#![cfg_attr(not(test), allow(dead_code, unused_imports))]

use super::*;
use crate::common::design::testing::row;
use crate::common::design::CELLS;
use tbb_tables::levels::{Encoding, Menu, PromptVariant, Workflow};

/// The four arms: (name, lane, repair).
const ARMS: [(&str, Menu, PromptVariant); 4] = [
    ("fixed", Menu::Fixed, PromptVariant::Base),
    ("routed", Menu::Routed, PromptVariant::Base),
    ("workflow", Menu::Fixed, PromptVariant::Workflow),
    ("guide", Menu::Fixed, PromptVariant::InterfaceGuide),
];

/// Two families × one configuration × the 8 endpoint cells × the four arms. Success:
/// the no-repair arm and the workflow prompt fail at (128, high, ·); the routed menu
/// never fails; the interface guide fails at (128, high, raw) only.
pub fn panel() -> Vec<EpisodeRow> {
    let mut rows = Vec::new();
    for family in ["f1", "f2"] {
        for c in &CELLS[..8] {
            for (name, lane, repair) in ARMS {
                let stressed = c.v == 128 && c.w == Workflow::High;
                let ok = match name {
                    "routed" => true,
                    "guide" => !(stressed && c.d == Encoding::Raw),
                    _ => !stressed,
                };
                let mut r = row("a", "O", family, family, c.v, c.w.name(), c.d.name(), ok);
                r.arm = name.into();
                r.lane = lane;
                r.repair = repair;
                rows.push(r);
            }
        }
    }
    rows
}

fn find<'a>(rows: &'a [RepairsRow], layer: &str, repair: &str) -> &'a RepairsRow {
    rows.iter()
        .find(|r| r.layer == layer && r.repair == repair)
        .unwrap_or_else(|| panic!("no row {layer} × {repair}"))
}

fn est(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

#[test]
fn l_gamma_sigma_delta_per_layer_by_hand() {
    let rows = rows(&panel(), 100, 1).unwrap_or_else(|e| panic!("{e}"));
    // V (8 → 128 over the four W × D strata): μ⁰ = (1, 0.5), routed (1, 1):
    // L = 50, Γ = 50, Σ = 50. Guide at V: (1, 0.75): Σ = 25; workflow: Σ = 0.
    // Δ = 50 − 25 = 25.
    let v = find(&rows, "V", "routed_menu");
    assert_eq!(v.role, Role::Repair);
    assert_eq!(
        (
            est(v.l_pp),
            est(v.gamma_pp),
            est(v.sigma_pp),
            est(v.delta_pp)
        ),
        (50.0, 50.0, 50.0, 25.0)
    );
    assert_eq!(est(find(&rows, "V", "interface_guide").sigma_pp), 25.0);
    assert_eq!(est(find(&rows, "V", "workflow_prompt").sigma_pp), 0.0);
    // W (low → high over V × D): μ⁰ = (1, 0.5); workflow = no repair: Γ = Σ = 0;
    // routed Σ = 50, guide Σ = 25: Δ = 0 − 50 = −50.
    let w = find(&rows, "W", "workflow_prompt");
    assert_eq!(
        (
            est(w.l_pp),
            est(w.gamma_pp),
            est(w.sigma_pp),
            est(w.delta_pp)
        ),
        (50.0, 0.0, 0.0, -50.0)
    );
    // D (raw → linked over V × W): μ⁰ = (0.75, 0.75): L = 0; guide (0.75, 1): Γ = 25,
    // Σ = 25; routed (1, 1): Σ = 0; workflow Σ = 0: Δ = 25.
    let d = find(&rows, "D", "interface_guide");
    assert_eq!(
        (
            est(d.l_pp),
            est(d.gamma_pp),
            est(d.sigma_pp),
            est(d.delta_pp)
        ),
        (0.0, 25.0, 25.0, 25.0)
    );
    // Every family is alike, so each interval is a point.
    assert_eq!(
        (v.sigma_pp_ci_low, v.sigma_pp_ci_high),
        (Some(50.0), Some(50.0))
    );
    // Counts: 8 cells, 2 families, 2 × 8 episodes per arm.
    assert_eq!((v.n_cells, v.n_families, v.n_episodes_per_arm), (8, 2, 16));
}

#[test]
fn activation_is_the_iut_with_holm_over_the_layers() {
    let rows = rows(&panel(), 100, 1).unwrap_or_else(|e| panic!("{e}"));
    // V: every part positive at the floor 1/100, so IUT p = 0.01; W (Γ = 0) and D
    // (L = 0) have IUT p = 1. Holm over three estimable layers: V 0.03, W and D 1.
    let v = find(&rows, "V", "routed_menu");
    assert_eq!(v.p_iut, Some(0.01));
    assert!(v.p_holm.is_some_and(|p| (p - 0.03).abs() < 1e-12));
    assert_eq!(v.activates, Some(true));
    assert_eq!(v.tost_margin_pp, None, "an activating repair has no margin");
    for (layer, repair) in [("W", "workflow_prompt"), ("D", "interface_guide")] {
        let r = find(&rows, layer, repair);
        assert_eq!(
            (r.p_iut, r.p_holm, r.activates),
            (Some(1.0), Some(1.0), Some(false))
        );
        assert!(r.tost_margin_pp.is_some());
    }
    // Controls are not tested for activation.
    assert_eq!(find(&rows, "V", "workflow_prompt").activates, None);
}

#[test]
fn the_router_layer_is_listed_as_not_estimable_without_its_arm() {
    let rows = rows(&panel(), 50, 1).unwrap_or_else(|e| panic!("{e}"));
    let r = find(&rows, "R", "router");
    assert!(!r.estimable);
    let note = r.note.clone().unwrap_or_default();
    assert!(note.contains("menu = router"), "{note}");
    assert_eq!((r.l_pp, r.p_holm, r.activates), (None, None, None));
    // The benchmark row closes the table: L = 40, Γ = 30, Σ = 20.
    let last = rows.last().unwrap_or_else(|| panic!("rows"));
    assert_eq!(last.role, Role::GenericRescueBenchmark);
    let close = |s: Option<f64>, x: f64| (est(s) - x).abs() < 1e-9;
    assert!(close(last.l_pp, 40.0) && close(last.gamma_pp, 30.0) && close(last.sigma_pp, 20.0));
    // A point without an interval: the ends are null, not NaN.
    assert_eq!((last.l_pp_ci_low, last.p_l_positive), (None, None));
}

#[test]
fn wrong_layer_controls_run_on_exactly_the_repairs_conditions() {
    let rows = rows(&panel(), 50, 1).unwrap_or_else(|e| panic!("{e}"));
    for layer in ["V", "W", "D"] {
        let own = rows
            .iter()
            .find(|r| r.layer == layer && r.role == Role::Repair)
            .unwrap_or_else(|| panic!("{layer}"));
        let controls: Vec<&RepairsRow> = rows
            .iter()
            .filter(|r| r.layer == layer && r.role == Role::WrongLayerControl)
            .collect();
        assert_eq!(controls.len(), 2, "{layer}");
        for c in controls {
            assert_eq!(
                (&c.cells, c.n_cells, c.n_episodes_per_arm, c.draw_seed),
                (
                    &own.cells,
                    own.n_cells,
                    own.n_episodes_per_arm,
                    own.draw_seed
                )
            );
        }
    }
    // Take the interface guide off one cell: it stops being a control of V (named in
    // the note), and its own layer D loses that stratum.
    let mut panel = panel();
    panel.retain(|r| {
        !(r.arm == "guide" && r.v == 128 && r.w == Workflow::High && r.d == Encoding::Linked)
    });
    let rows = super::rows(&panel, 50, 1).unwrap_or_else(|e| panic!("{e}"));
    assert!(!rows
        .iter()
        .any(|r| r.layer == "V" && r.repair == "interface_guide"));
    let v = find(&rows, "V", "routed_menu");
    assert!(v
        .note
        .as_deref()
        .is_some_and(|n| n.contains("interface_guide")));
    assert_eq!(find(&rows, "D", "interface_guide").n_cells, 6);
}

#[test]
fn the_table_reads_back_as_its_rows() {
    // 100 draws: V's IUT p is the floor 0.01, 0.03 after Holm over three layers.
    let rows = rows(&panel(), 100, 1).unwrap_or_else(|e| panic!("{e}"));
    let t = RepairsRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
    let back = RepairsRow::from_batch(&t).unwrap_or_else(|e| panic!("{e}"));
    // V, W, D with two controls each, R, and the benchmark.
    assert_eq!(back.len(), 11);
    assert_eq!(back, rows);
    assert_eq!(back[0].n_cells, 8);
    assert_eq!((back[0].activates, back[1].activates), (Some(true), None));
    assert_eq!(back[0].l_pp, Some(50.0));
    assert!(back
        .iter()
        .all(|r| r.p_floor == 0.01 && r.draws == 100 && r.seed == 1));
}
