//! The policy pilot (paper Table 13): per action, success pooled and after a failed
//! probe, the practitioner's policy and the cost per 1,000 conditions with the probe
//! charged; the trace selector against the switch and its fitted rules — with the
//! paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `pilot` and `trace_selector` tables, and the paper's
//! values it quotes.
//!
//! Never: computes an estimate or an interval.

use tbb_tables::analyses::pilot::{PilotRow, TraceSelectorRow};
use tbb_tables::levels::level_name;
use tbb_tables::TableRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{absent, rows, Tables};

/// The paper's values per action: (action, success, after a failed probe), as
/// published ("—" where it publishes none).
const PAPER: [(&str, &str, &str); 5] = [
    ("retry", "67.7% (130 of 192)", "24.6% (16 of 65)"),
    ("cap4096", "—", "41.5%"),
    ("router", "78.6% (151)", "61.5% (40)"),
    ("combined", "81.8% (157)", "66.2% (43)"),
    ("switch", "99.0% (190)", "98.5% (64)"),
];

/// The paper's trace selector: success, and its difference from the switch.
const PAPER_SELECTOR: (&str, &str) = ("97.9% (188)", "-1.0 [-2.6, 0.0]");

/// Fills the pilot section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "A block is one condition with its probe and each restart run independently on \
         it. Success is over every block; \"after a failed probe\" over the blocks whose \
         probe failed; the policy keeps a successful probe and takes the action only \
         after a failure. Costs are per 1,000 conditions at the catalogue's frozen \
         prices: the probe plus the action, the action alone, and the policy's (the \
         probe, plus the action after a failure). The trace selector is a depth-one tree \
         on the probe's public numbers, fitted with each intent held out; its difference \
         from the switch is paired by block with a 95% intent-cluster interval, the \
         fitted rules held fixed.",
    )]);
    let Some(pilot) = rows::<PilotRow>(tables)? else {
        s.note(absent("The pilot", PilotRow::TABLE, "pilot"));
        return Ok(());
    };
    let mut out = Table::new(
        "Per action (%, USD per 1,000 conditions); ours beside the paper's Table 13 \
         (labelled \"paper\").",
        &[
            ("Action", Align::Left),
            ("Success", Align::Right),
            ("After a failed probe", Align::Right),
            ("Policy", Align::Right),
            ("Probe + action", Align::Right),
            ("Action alone", Align::Right),
            ("Policy cost", Align::Right),
            ("Paper success", Align::Right),
            ("Paper after a failed probe", Align::Right),
        ],
    );
    let mut selector_line = None;
    // A null share or bound prints as "—", as a non-finite one does.
    let or_missing = |v: Option<f64>| v.unwrap_or(f64::NAN);
    for r in &pilot {
        let (paper_success, paper_after) = if r.action == "trace_selector" {
            (PAPER_SELECTOR.0, "—")
        } else {
            PAPER
                .iter()
                .find(|p| p.0 == r.action)
                .map_or(("—", "—"), |p| (p.1, p.2))
        };
        out.push(vec![
            r.action.replace('_', " "),
            format::percent(r.success),
            if r.action == "probe" {
                "—".into()
            } else {
                format::percent(or_missing(r.success_after_failed_probe))
            },
            format::percent(r.policy_success),
            format::usd(r.cost_per_1000_usd),
            format::usd(r.action_cost_per_1000_usd),
            format::usd(r.policy_cost_per_1000_usd),
            paper_success.into(),
            paper_after.into(),
        ]);
        if let Some(vs) = r.vs_switch_pp.filter(|v| v.is_finite()) {
            selector_line = Some(format!(
                "The trace selector minus the switch: {} pp over {} blocks ({} with a failed \
                 probe); the paper's: {} pp.",
                format::effect_with_interval(
                    vs,
                    or_missing(r.vs_switch_ci_low_pp),
                    or_missing(r.vs_switch_ci_high_pp)
                ),
                format::count(u64::from(r.n_blocks)),
                format::count(u64::from(r.n_failed_probe)),
                PAPER_SELECTOR.1
            ));
        }
    }
    s.table(out);
    if let Some(line) = selector_line {
        s.note(vec![text(line)]);
    }
    match rows::<TraceSelectorRow>(tables)? {
        Some(selector) => {
            let mut rules = Table::new(
                "The trace selector's fitted rule per held-out intent.",
                &[("Held-out intent", Align::Left), ("Rule", Align::Left)],
            );
            for r in &selector {
                let rule = match r.feature {
                    Some(f) => format!(
                        "{} ≤ {} → {}, else {}",
                        level_name(&f),
                        format::fixed(or_missing(r.threshold), 1),
                        r.action_at_or_below,
                        r.action_above
                    ),
                    None => format!("always {}", r.action_at_or_below),
                };
                rules.push(vec![r.held_out_intent.clone(), rule]);
            }
            s.table(rules);
        }
        None => s.note(absent(
            "The selector's rules",
            TraceSelectorRow::TABLE,
            "pilot",
        )),
    }
    s.note(vec![text(
        "The paper's mean cost per 1,000 conditions with the probe charged: USD 4.49 for \
         trace selection and 4.62 for probing then switching, against 1.94 for switching \
         without a probe (its providers' prices; ours are the simulated catalogue's).",
    )]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use tbb_analysis::pilot;

    /// The section from the analysis's tables on the hand-built blocks of its tests.
    #[test]
    fn the_pilot_section() {
        let episodes = pilot::tests::panel();
        let r = super::super::testing::rendered(
            &pilot::Pilot,
            "pilot",
            &episodes,
            r#"{"probe": "probe", "retry_repeat": 1, "actions": ["fixit"], "switch": "sw", "draws": 200, "seed": 3}"#,
        );
        insta::assert_snapshot!(super::super::testing::section(&r, "## The policy pilot"));
    }
}
