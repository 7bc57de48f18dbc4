//! The policy pilot (paper Table 13): per action, success pooled and after a failed
//! probe, the practitioner's policy and the cost per 1,000 conditions with the probe
//! charged; the trace selector against the switch and its fitted rules — with the
//! paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `pilot` and `trace_selector` tables, and which row each of
//! the paper's pilot values ([`paper::pilot`]) stands beside.
//!
//! Never: computes an estimate or an interval.

use tbb_tables::analyses::pilot::{PilotRow, TraceSelectorRow};
use tbb_tables::levels::level_name;
use tbb_tables::TableRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::paper::{pilot as q, Quote};
use super::super::ReportError;
use super::{absent, rows, Tables};

/// What the paper's Table 13 and its text print for an action, as shown: success
/// over every block, after a failed probe, the policy's success, and the cost per
/// 1,000 conditions of the probe and the action and of the action alone ("—" where it
/// prints none).
fn paper(action: &str) -> [String; 5] {
    let share = |share: Quote, blocks: Quote| format!("{} ({})", share.text(), blocks.text());
    let of = |share: Quote, blocks: Quote, all: Quote| {
        format!("{} ({} of {})", share.text(), blocks.text(), all.text())
    };
    let missing = || format::MISSING.to_string();
    match action {
        "probe" => [
            format!("{} of {}", q::PROBE_SUCCESSES.text(), q::BLOCKS.text()),
            missing(),
            missing(),
            missing(),
            missing(),
        ],
        "retry" => [
            of(q::RETRY, q::RETRY_BLOCKS, q::BLOCKS),
            of(
                q::RETRY_AFTER_FAILED,
                q::RETRY_AFTER_FAILED_BLOCKS,
                q::FAILED_PROBES,
            ),
            missing(),
            missing(),
            missing(),
        ],
        "cap4096" => [
            missing(),
            q::CAP_AFTER_FAILED.text(),
            missing(),
            missing(),
            missing(),
        ],
        "router" => [
            share(q::ROUTER, q::ROUTER_BLOCKS),
            share(q::ROUTER_AFTER_FAILED, q::ROUTER_AFTER_FAILED_BLOCKS),
            missing(),
            missing(),
            missing(),
        ],
        "combined" => [
            share(q::COMBINED, q::COMBINED_BLOCKS),
            share(q::COMBINED_AFTER_FAILED, q::COMBINED_AFTER_FAILED_BLOCKS),
            q::COMBINED_POLICY.text(),
            missing(),
            missing(),
        ],
        "switch" => [
            share(q::SWITCH, q::SWITCH_BLOCKS),
            share(q::SWITCH_AFTER_FAILED, q::SWITCH_AFTER_FAILED_BLOCKS),
            q::SWITCH_POLICY.text(),
            q::PROBE_AND_SWITCH_COST.text(),
            q::SWITCH_ALONE_COST.text(),
        ],
        "trace_selector" => [
            share(q::TRACE_SELECTOR, q::TRACE_SELECTOR_BLOCKS),
            missing(),
            missing(),
            q::SELECTOR_COST.text(),
            missing(),
        ],
        _ => [missing(), missing(), missing(), missing(), missing()],
    }
}

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
            ("Paper policy", Align::Right),
            ("Paper probe + action", Align::Right),
            ("Paper action alone", Align::Right),
        ],
    );
    let mut selector_line = None;
    // A null share or bound prints as "—", as a non-finite one does.
    let or_missing = |v: Option<f64>| v.unwrap_or(f64::NAN);
    for r in &pilot {
        let mut row = vec![
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
        ];
        row.extend(paper(&r.action));
        out.push(row);
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
                q::SELECTOR_MINUS_SWITCH.text()
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
    s.note(vec![text(format!(
        "The paper's pilot: {} blocks, of which the probe succeeds in {} and fails in {} \
         (the after-a-failed-probe columns are over those {}). Its mean cost per 1,000 \
         conditions with the probe charged is {} for trace selection and {} for probing \
         then switching, against {} for switching without a probe (its providers' \
         prices; ours are the simulated catalogue's). It prints no policy figure or cost \
         for the other actions, and no success for the larger cap over every block.",
        q::BLOCKS.text(),
        q::PROBE_SUCCESSES.text(),
        q::FAILED_PROBES.text(),
        q::FAILED_PROBES.text(),
        q::SELECTOR_COST.text(),
        q::PROBE_AND_SWITCH_COST.text(),
        q::SWITCH_ALONE_COST.text()
    ))]);
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
