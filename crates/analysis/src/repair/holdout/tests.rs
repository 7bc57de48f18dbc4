#![cfg_attr(not(test), allow(dead_code, unused_imports))]
use super::*;
use crate::common::design::testing::row;
use tbb_tables::levels::Delivery;

/// Two configurations (`c1` confirmatory) × two families × depths 2 and 30 × raw and
/// compact × three arms. The baseline and canonical delivery succeed at 2 calls and
/// fail at 30; the controller succeeds everywhere but on f2 at (30, compact).
pub fn episodes() -> Vec<EpisodeRow> {
    let mut out = Vec::new();
    for configuration in ["c1", "c2"] {
        for family in ["f1", "f2"] {
            for depth in [2u32, 30] {
                for d in ["raw", "compact"] {
                    for arm in ["baseline", "controller", "canonical"] {
                        let vts = match arm {
                            "controller" => !(family == "f2" && depth == 30 && d == "compact"),
                            _ => depth == 2,
                        };
                        let mut r = row(configuration, "O", family, family, 8, "high", d, vts);
                        r.depth = Some(depth);
                        r.arm = arm.into();
                        r.lane = Menu::Fixed;
                        match arm {
                            "controller" => {
                                r.actor = Actor::Controller;
                                r.calls = depth;
                                r.calls_by_controller = depth - 1;
                                r.requests = 2;
                            }
                            "canonical" => r.delivery = Delivery::Canonical,
                            _ => {
                                r.calls = depth.min(20);
                                r.requests = depth.min(20) + 1;
                            }
                        }
                        out.push(r);
                    }
                }
            }
        }
    }
    out
}

fn find<'a>(
    rows: &'a [HoldoutRow],
    population: Population,
    layer: &str,
    role: Role,
) -> &'a RepairsRow {
    rows.iter()
        .find(|r| {
            r.population == Some(population) && r.effects.layer == layer && r.effects.role == role
        })
        .map(|r| &r.effects)
        .unwrap_or_else(|| panic!("no {population:?} {layer} {role:?} row"))
}

fn close(x: Option<f64>, want: f64) {
    let got = x.unwrap_or(f64::NAN);
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
}

use tbb_tables::analyses::repairs::RepairsRow;
use tbb_tables::levels::Encoding;
use Role::{Repair, WrongLayerControl};

/// By hand. Depth layer (strata raw, compact): μ⁰ = (1, 0), controller (1, 0.75),
/// canonical (1, 0): L = 100, Γ = 75, Σ = 75 − 0 = 75; canonical's Σ = 0, so Δ = 75.
/// Encoding layer (strata depth 2, 30): μ⁰ = (0.5, 0.5), canonical (0.5, 0.5), the
/// controller (1, 0.75): L = 0, Γ = 0, Σ = 0; the controller's Γ = 25 and
/// Σ = 25 − 50 = −25, so canonical's Δ = 0 − (−25) = 25.
#[test]
fn the_controller_and_its_control_are_hand_computed_in_both_populations() {
    let rows = rows(&episodes(), &["c1".to_string()], 200, 7).unwrap_or_else(|e| panic!("{e}"));
    for population in [Population::All, Population::Confirmatory] {
        let ctrl = find(&rows, population, "depth", Repair);
        assert_eq!(ctrl.repair, "controller");
        close(ctrl.l_pp, 100.0);
        close(ctrl.gamma_pp, 75.0);
        close(ctrl.sigma_pp, 75.0);
        close(ctrl.delta_pp, 75.0);
        assert!(ctrl.note.as_deref().is_some_and(|n| n.contains("±200 pp")));
        let control = find(&rows, population, "depth", WrongLayerControl);
        assert_eq!(control.repair, "canonical_delivery");
        close(control.gamma_pp, 0.0);
        close(control.sigma_pp, 0.0);
        let canonical = find(&rows, population, "D", Repair);
        close(canonical.l_pp, 0.0);
        close(canonical.gamma_pp, 0.0);
        close(canonical.sigma_pp, 0.0);
        close(canonical.delta_pp, 25.0);
        let its_control = find(&rows, population, "D", WrongLayerControl);
        assert_eq!(its_control.repair, "controller");
        close(its_control.gamma_pp, 25.0);
        close(its_control.sigma_pp, -25.0);
        // Every draw keeps L, Γ, Σ and Δ of the controller positive: its one-sided p
        // is the floor 1/B, and Holm over the two repairs doubles it; canonical
        // delivery's L is 0 in every draw (p = 1).
        assert_eq!(ctrl.p_iut, Some(1.0 / 200.0));
        assert_eq!(ctrl.p_holm, Some(2.0 / 200.0));
        assert_eq!(ctrl.activates, Some(true));
        assert_eq!(canonical.p_holm, Some(1.0));
        assert_eq!(canonical.activates, Some(false));
    }
    let n = |p: Population| find(&rows, p, "depth", Repair).n_configurations;
    assert_eq!((n(Population::All), n(Population::Confirmatory)), (2, 1));
}

#[test]
fn the_controller_needs_delta_positive_to_activate() {
    // Make canonical delivery rescue as much as the controller: Δ = 0, so the
    // controller no longer activates although L, Γ and Σ stay positive.
    let mut eps = episodes();
    for r in &mut eps {
        if r.delivery == Delivery::Canonical {
            r.vts = !(r.family == "f2" && r.depth == Some(30) && r.d == Encoding::Compact);
            r.ok = [r.vts; 9];
        }
    }
    let rows = rows(&eps, &["c1".to_string()], 200, 7).unwrap_or_else(|e| panic!("{e}"));
    let ctrl = find(&rows, Population::All, "depth", Repair);
    close(ctrl.delta_pp, 0.0);
    close(ctrl.sigma_pp, 75.0);
    assert_eq!(ctrl.activates, Some(false));
}

#[test]
fn arms_report_calls_the_controllers_share_and_requests_per_depth() {
    let arms = arm_rows(&episodes());
    let get = |role: ArmRole, depth: u32| {
        arms.iter()
            .find(|a| a.role == role && a.depth == depth)
            .unwrap_or_else(|| panic!("{role:?} at {depth}"))
    };
    let base = get(ArmRole::Baseline, 30);
    assert_eq!((base.n_episodes, base.vts), (8, 0.0));
    assert_eq!(
        (base.calls_per_episode, base.requests_per_episode),
        (20.0, 21.0)
    );
    let ctrl = get(ArmRole::Controller, 30);
    assert_eq!(ctrl.vts, 0.75);
    assert_eq!(
        (
            ctrl.calls_per_episode,
            ctrl.controller_calls_per_episode,
            ctrl.requests_per_episode
        ),
        (30.0, 29.0, 2.0)
    );
    assert_eq!(get(ArmRole::CanonicalDelivery, 2).vts, 1.0);
    // Roles in table order, each by depth.
    let order: Vec<(ArmRole, u32)> = arms.iter().map(|a| (a.role, a.depth)).collect();
    assert_eq!(
        order,
        [
            (ArmRole::Baseline, 2),
            (ArmRole::Baseline, 30),
            (ArmRole::Controller, 2),
            (ArmRole::Controller, 30),
            (ArmRole::CanonicalDelivery, 2),
            (ArmRole::CanonicalDelivery, 30)
        ]
    );
}

#[test]
fn a_confirmatory_configuration_the_study_lacks_is_named() {
    let params = Params {
        confirmatory: vec!["sim-nowhere".into()],
        draws: None,
        seed: None,
    };
    let design = Design {
        cells: vec![],
        menus: vec![Menu::Fixed],
        prompts: vec![],
        deliveries: vec![],
        actors: vec![Actor::Controller],
        configurations: vec!["sim-a".into()],
        arms: vec![],
        blocks: vec![],
        completion_caps: vec![1024],
        plays_toolsandbox: false,
    };
    let why = Holdout::needs_with(&params, &design).unwrap_or_default();
    assert!(why.contains("`sim-nowhere`"), "{why}");
    assert!(Holdout::check(&Params::default())
        .iter()
        .any(|p| p.path == "confirmatory"));
}
