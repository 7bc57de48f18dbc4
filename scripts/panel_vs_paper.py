#!/usr/bin/env python3
"""The simulated panel beside the paper, per study headline.

Reads the Parquet tables that `tbb apply` published under OUT/<study>/ and prints one
markdown table row per headline: study, quantity, the paper's value (quoted, with where
the paper gives it), the panel's value, and the table/column it came from.

    python3 scripts/panel_vs_paper.py OUT > table.md   # OUT: the outputs folder

after applying the nine paper studies into OUT (docs/panel-vs-paper.md lists the
commands). Needs pandas and pyarrow. The paper's values are the paper's (its text has
no section numbers; each location names the paragraph's topic and the table, figure or
appendix it cites). Nothing here depends on configuration names except
where a row says so, so the same script reads the "after" outputs.
"""
import sys
import os
import pandas as pd

if len(sys.argv) != 2:
    sys.exit("usage: scripts/panel_vs_paper.py OUT (the outputs folder of the nine studies)")
OUT = sys.argv[1]
ROWS = []


def rd(study, table):
    return pd.read_parquet(os.path.join(OUT, study, f"{table}.parquet"))


def f1(x, sign=True):
    if x is None or (isinstance(x, float) and pd.isna(x)):
        return "—"
    return f"{x:+.1f}" if sign else f"{x:.1f}"


def ci(lo, hi):
    return f"[{lo:.1f}, {hi:.1f}]"


def pct(x):
    return f"{100 * x:.1f}%"


def p3(p):
    if p is None or pd.isna(p):
        return "—"
    return f"{p:.4f}".rstrip("0").rstrip(".") if p < 0.01 else f"{p:.3f}"


def row(study, quantity, paper, panel, source):
    ROWS.append((study, quantity, paper, panel, source))


def safe(study, quantity, paper, fn, source):
    """Computes a panel value; marks it not computable (with the reason) on failure."""
    try:
        row(study, quantity, paper, fn(), source)
    except Exception as e:  # noqa: BLE001 - a missing table or column is reported, not fatal
        row(study, quantity, paper, f"NOT COMPUTED ({type(e).__name__}: {e})", source)


# ----------------------------------------------------------------- capacity -------
S = "capacity"


def contrast(lane="routed", weighting="unit", c="v", unit="family"):
    t = rd(S, "contrasts")
    r = t[(t.lane == lane) & (t.weighting == weighting) & (t.contrast == c) & (t.cluster_unit == unit)]
    assert len(r) == 1, f"{len(r)} rows"
    return r.iloc[0]


def cstr(lane="routed", weighting="unit", c="v", unit="family"):
    r = contrast(lane, weighting, c, unit)
    return f"{f1(r.estimate_pp)} {ci(r.ci_low_pp, r.ci_high_pp)}, Holm p {p3(r.p_holm)}"


def mean_vts():
    t = rd(S, "costs")
    a = t[(t.configuration == "all")]
    d = {r.lane: r.vts_rate for r in a.itertuples()}
    return f"{pct(d['all'])} (both menus); routed {pct(d['routed'])}, fixed {pct(d['fixed'])}"


safe(S, "Mean VTS over the capacity episodes",
     "82.1% (Results, first paragraph of the capacity results)", mean_vts,
     "costs.parquet `vts_rate`, configuration `all`, lane all/routed/fixed")
safe(S, "V effect (V 128 − 8), routed menu, families resampled",
     "−12.3 [−14.6, −9.9], Holm p < .001 (capacity results; Figure 2a)",
     lambda: cstr(c="v"), "contrasts.parquet lane=routed, weighting=unit, contrast=v, cluster_unit=family: `estimate_pp`, `ci_*`, `p_holm`")
safe(S, "V effect, configurations resampled",
     "[−19.8, −5.7], Holm p = .011 (capacity results; Appendix D)",
     lambda: cstr(c="v", unit="configuration"), "contrasts.parquet … cluster_unit=configuration")


def fam_degrade():
    e = rd(S, "episodes")
    e = e[(e.lane == "routed") & (e.w.isin(["low", "high"])) & (e.d.isin(["raw", "linked"])) & (e.r == "low")]
    g = e.groupby(["family", "v"]).vts.mean().unstack("v")
    eff = g[128] - g[8]
    return f"{int((eff < 0).sum())} of {len(eff)} degrade ({int((eff == 0).sum())} unchanged, {int((eff > 0).sum())} gain)"


safe(S, "Families that degrade from V 8 to 128 (routed)", "34 of 36 (capacity results)", fam_degrade,
     "computed from episodes.parquet (routed lane, the 4 endpoint W×D cells, mean over configurations, per family)")
safe(S, "V contrast with the full menu kept visible (fixed lane)",
     "−17.5 [−20.2, −14.9] (capacity results)", lambda: cstr(lane="fixed", c="v"),
     "contrasts.parquet lane=fixed, unit, v, family")
safe(S, "W effect (W high − low), routed", "+0.8 [−1.2, 2.8] (capacity results)",
     lambda: cstr(c="w"), "contrasts.parquet lane=routed, unit, w, family")
safe(S, "W effect, configurations resampled", "[−4.6, 6.5], Holm p = 1.000 (Appendix D)",
     lambda: cstr(c="w", unit="configuration"), "contrasts.parquet … w, configuration")


def w_range():
    t = rd(S, "contrasts_by_configuration")
    t = t[(t.lane == "routed") & (t.contrast == "w")]
    lo, hi = t.loc[t.estimate_pp.idxmin()], t.loc[t.estimate_pp.idxmax()]
    return f"{f1(lo.estimate_pp)} ({lo.configuration}) to {f1(hi.estimate_pp)} ({hi.configuration})"


safe(S, "Per-configuration W effects, range", "−30.6 (Gemini 3.6 Flash) to +34.7 (HY4 Preview) (capacity results; Table 4)",
     w_range, "contrasts_by_configuration.parquet lane=routed, contrast=w: min/max `estimate_pp`")
safe(S, "compact − raw at (8, low), families resampled",
     "−3.7 [−5.7, −1.9], Holm p = .003 (encoding paragraph)", lambda: cstr(c="d_compact"),
     "contrasts.parquet lane=routed, unit, d_compact, family")
safe(S, "compact − raw, configurations resampled",
     "[−5.0, −2.5], Holm p < .001 (Appendix D)", lambda: cstr(c="d_compact", unit="configuration"),
     "contrasts.parquet … d_compact, configuration")


def signflip_compact():
    t = rd(S, "contrasts_sign_flip")
    r = t[(t.lane == "routed") & (t.weighting == "unit") & (t.contrast == "d_compact") & (t.cluster_unit == "intent")].iloc[0]
    return f"p = {p3(r.p_value)}, Holm p = {p3(r.p_holm)}"


safe(S, "compact − raw, exact sign-flip over 12 intents",
     "p = .0098, Holm p = .068 (encoding paragraph; Appendix D)", signflip_compact,
     "contrasts_sign_flip.parquet lane=routed, unit, d_compact, intent: `p_value`, `p_holm`")
safe(S, "linked − raw (main effect over the endpoint cells)", "\"no detectable effect\" (encoding paragraph; no number)",
     lambda: cstr(c="d_linked"), "contrasts.parquet lane=routed, unit, d_linked, family")
safe(S, "typed − raw at (8, low)", "\"no detectable effect\" (encoding paragraph; no number)",
     lambda: cstr(c="d_typed"), "contrasts.parquet lane=routed, unit, d_typed, family")
safe(S, "V × W interaction", "+3.0 [0.2, 5.7], Holm p = .202 (encoding paragraph; Appendix D)",
     lambda: cstr(c="v_x_w"), "contrasts.parquet lane=routed, unit, v_x_w, family")


def orgw():
    out = []
    for c, name in [("v", "V"), ("w", "W"), ("d_compact", "compact")]:
        a, b = contrast(c=c).estimate_pp, contrast(weighting="organization_equal", c=c).estimate_pp
        out.append(f"{name} {f1(b)} (unweighted {f1(a)})")
    t = rd(S, "contrasts")
    u = t[t.weighting == "unit"].set_index(["lane", "contrast", "cluster_unit"]).estimate_pp
    o = t[t.weighting == "organization_equal"].set_index(["lane", "contrast", "cluster_unit"]).estimate_pp
    out.append(f"max |weighted − unweighted| over every contrast and lane {float((o - u).abs().max()):.2g} pp")
    e = rd(S, "episodes")
    n = e.groupby("organization").configuration.nunique()
    return "; ".join(out) + f"; configurations per organization: " + ", ".join(f"{k} {v}" for k, v in n.items())


safe(S, "Organization-weighted contrasts (each organization counts equally)",
     "V −15.3, W +3.8, compact −4.7 (Appendix D; unweighted −12.3 / +0.8 / −3.7)", orgw,
     "contrasts.parquet weighting=organization_equal vs unit (routed, family); episodes.parquet `organization`")


def trunc_share():
    t = rd(S, "truncation")
    a = t[(t.lane == "routed") & (t.configuration == "all")].set_index("v")
    r128 = a.loc[128]
    return (f"{pct(a.loc[8].truncated_share)} at V = 8, {pct(r128.truncated_share)} at V = 128; "
            f"{int(r128.truncated_before_first_call)} of {int(r128.truncated)} at V = 128 before any call")


safe(S, "Truncation share at the cap, V = 8 → 128; before any call",
     "1.6% → 13.6%; 391 of 411 truncated at V = 128 end before any call (truncation paragraph)", trunc_share,
     "truncation.parquet lane=routed, configuration=all: `truncated_share`, `truncated`, `truncated_before_first_call`")


def pairs():
    t = rd(S, "truncation_pairs")
    r = t[(t.lane == "routed") & (t.configuration == "all (pooled)")]
    if r.empty:
        r = t[(t.lane == "routed") & (t.configuration.str.startswith("all"))]
    r = r.iloc[0]
    return (f"{int(r.pairs)} pairs: {int(r.lost)} lose, {int(r.gained)} gain; {int(r.lost_truncated_128)} lost truncated pairs "
            f"carry {r.lost_truncated_pp:.1f} of {r.lost_pp:.1f} pp lost")


safe(S, "Matched pairs lost/gained; loss carried by truncated pairs",
     "3,024 pairs: 472 lose, 101 gain; 343 lost truncated pairs carry 11.3 of 15.6 pp (truncation paragraph)", pairs,
     "truncation_pairs.parquet lane=routed, pooled row: `lost`, `gained`, `lost_truncated_128`, `lost_truncated_pp`, `lost_pp`")


def strata_row(lane="routed"):
    t = rd(S, "strata")
    r = t[(t.lane == lane) & (t.configuration.str.startswith("all"))].iloc[0]
    return r


safe(S, "Untruncated pairs (neither menu truncated): menu effect",
     "2,595 pairs, −1.5 pp (stratification paragraph)",
     lambda: (lambda r: f"{int(r.pairs_neither_truncated)} pairs, {f1(r.neither_truncated_effect_pp)} pp (fixed lane: "
              f"{f1(strata_row('fixed').neither_truncated_effect_pp)})")(strata_row()),
     "strata.parquet lane=routed, pooled row: `pairs_neither_truncated`, `neither_truncated_effect_pp`")
safe(S, "Truncation-resolution bounds on the V effect (independent; alike)",
     "[−13.9, 1.3]; alike [−12.3, −0.3] (stratification paragraph; Appendix D)",
     lambda: (lambda r: f"{ci(r.bound_independent_low_pp, r.bound_independent_high_pp)}; alike "
              f"{ci(r.bound_alike_low_pp, r.bound_alike_high_pp)}")(strata_row()),
     "strata.parquet lane=routed, pooled row: `bound_independent_*`, `bound_alike_*`")


def corr():
    t = rd(S, "truncation_correlation")
    r = t[t.lane == "routed"].iloc[0]
    return (f"r = {r.pearson_r:.2f}, ρ = {r.spearman_rho:.2f}; {int(r.never_truncating)} never truncate, V effects "
            f"{f1(r.never_truncating_v_effect_min_pp)} to {f1(r.never_truncating_v_effect_max_pp)}")


safe(S, "V effect vs truncation rate across configurations; never-truncating configurations",
     "Pearson r = −0.95, Spearman ρ = −0.82; the 8 never-truncating configurations have V effects −2.1 to 2.8 (Figure 6)",
     corr, "truncation_correlation.parquet lane=routed")


def loss_without_trunc():
    t = rd(S, "truncation_pairs")
    t = t[(t.lane == "routed") & ~t.configuration.str.startswith("all")]
    low = t[t.truncation_rate_128 <= 0.01]
    w = low.loc[low.v_effect_pp.idxmin()]
    st = rd(S, "strata")
    st = st[(st.lane == "routed") & ~st.configuration.str.startswith("all")]
    wi = st.loc[st.neither_truncated_effect_pp.idxmin()]
    return (f"worst V effect at ≤ 1% truncation: {f1(w.v_effect_pp)} ({w.configuration}, {pct(w.truncation_rate_128)}); "
            f"worst effect within a configuration's untruncated pairs: {f1(wi.neither_truncated_effect_pp)} ({wi.configuration})")


safe(S, "A loss without truncation",
     "DeepSeek V4.1 Flash: V effect −18.1 pp at 0.7% truncation (truncation paragraph)", loss_without_trunc,
     "truncation_pairs.parquet (routed, per configuration) `v_effect_pp`, `truncation_rate_128`; strata.parquet `neither_truncated_effect_pp`")


def lanes():
    t = rd(S, "lanes")
    a = t[(t.scope == "all") & (t.cluster_unit == "family")].iloc[0]
    b = t[(t.scope == "v=128") & (t.cluster_unit == "family")].iloc[0]
    return (f"all cells ({int(a.pairs)} pairs): {f1(a.estimate_pp)} {ci(a.ci_low_pp, a.ci_high_pp)}, fixed uses "
            f"{a.fixed_extra_tokens_per_episode:,.0f} more tokens and {a.fixed_extra_schema_exposures_per_episode:.1f} more exposures; "
            f"V = 128 ({int(b.pairs)} pairs): {f1(b.estimate_pp)} {ci(b.ci_low_pp, b.ci_high_pp)}, "
            f"{b.fixed_extra_tokens_per_episode:,.0f} tokens, {b.fixed_extra_schema_exposures_per_episode:.1f} exposures")


safe(S, "Routed − fixed lane (VTS), fixed lane's extra tokens and schema exposures",
     "over 3,024 paired episodes +2.4 [1.1, 3.8]; fixed uses 4,699 more tokens and 47.7 more exposures (Appendix D)", lanes,
     "lanes.parquet cluster_unit=family, scope `all` and `v=128`")


def first_resp():
    t = rd(S, "first_responses")
    r = t[t.configuration.str.startswith("all")].iloc[0]
    return (f"{int(r.configurations)} reporting configurations; {int(r.cut)} cut, {int(r.reasoning_only)} "
            f"({pct(r.reasoning_only_share)}) reasoning-only, {int(r.cut_in_tool_call)} in a tool call, {int(r.cut_in_text)} in text; "
            f"{int(r.never_truncating)} never truncate")


safe(S, "First responses to a 128-schema request cut at the cap (Table 8)",
     "9 reporting; 171 cut, 120 (70.2%) reasoning-only, 39 in a tool call, 12 in text; 5 of 9 never truncate (Appendix E, Table 8)",
     first_resp, "first_responses.parquet pooled row")


def decoders():
    p = rd(S, "decoder_packets").set_index("packets").n
    d = rd(S, "decoders").set_index("feature_set")
    ba = lambda k: f"{100 * d.loc[k].balanced_accuracy:.1f}"
    return (f"packets {p['labelled']} (V {p['labelled_v']}, W {p['labelled_w']}, D {p['labelled_d']}); BA first unmet {ba('first_unmet')}, "
            f"terminal flag {ba('terminal_flag')}, both {ba('first_unmet+terminal_flag')}, call counts {ba('call_counts')}, "
            f"menu-size proxy {ba('menu_size_proxy')}")


safe(S, "Decoders (Table 11): packets and balanced accuracy (%)",
     "127 packets (87 V, 28 W, 12 D); first unmet 53.4, terminal flag 48.5, both 48.9, call counts 54.8, menu-size proxy 71.8 (Table 11)",
     decoders, "decoder_packets.parquet `n`; decoders.parquet `balanced_accuracy`")


def gains():
    g = rd(S, "decoder_gains")
    name = {"first_unmet+terminal_flag+trace_shape": "record+shape", "first_unmet+terminal_flag": "joint",
            "first_unmet": "first unmet", "call_counts": "call counts", "trace_shape": "trace shape"}
    return "; ".join(f"{name.get(r.feature_set, r.feature_set)} vs {name.get(r.against, r.against)} "
                     f"{f1(r.gain_pp)} {ci(r.ci_low_pp, r.ci_high_pp)}" for r in g.itertuples())


safe(S, "Decoders' five comparisons (paired gains, 99% intent-cluster intervals)",
     "record+shape vs call counts −3.5 [−9.4, 5.1]; vs first unmet −2.1 [−15.1, 12.4]; vs trace shape −1.1 [−7.6, 6.8]; "
     "vs joint +2.3 [−9.1, 10.3]; joint vs first unmet −4.4 [−15.0, 9.7] (Figure 11)",
     gains, "decoder_gains.parquet `gain_pp`, `ci_*`")


def anatomy():
    t = rd(S, "interaction_anatomy")
    r = t[(t.lane == "routed") & (t.completion_cap == 1024) & (t.cluster_unit == "family")].iloc[0]
    return (f"expected {f1(r.expected_independent_pp)}; {pct(r.all_stressed_fail_share)} from {int(r.all_stressed_fail_units)} of "
            f"{int(r.n_units)} units; without {int(r.forced_units)} sign-forced units {f1(r.unforced_pp)} {ci(r.ci_low_pp, r.ci_high_pp)}; "
            f"joint rescues {int(r.joint_rescue_units)} ({pct(r.joint_rescue_share)}); coefficient {f1(r.observed_pp)}")


safe(S, "V × W anatomy: independent expectation; all-stressed-fail share; without sign-forced units; joint rescues",
     "0.1; 68.9% from 31 of 1,512 units; 2.0 [−0.3, 4.1]; 200 (13.2%) (Appendix D)",
     anatomy, "interaction_anatomy.parquet routed, 1024, family (docs/interaction-anatomy.md)")


def infra():
    t = rd(S, "costs")
    return f"{int(t[(t.configuration == 'all') & (t.lane == 'all')].infra_failures.iloc[0])} (simulated panel)"


safe(S, "Conditions failed for infrastructure reasons", "9 (8 capacity, 1 discovery) (Appendix D)", infra,
     "costs.parquet configuration `all`, lane `all`: `infra_failures`")

# -------------------------------------------------------------------- sweep -------
S = "sweep"


def cap_row(study, stratum, role, stat="v_contrast"):
    t = rd(study, "cap_sweep" if study == "sweep" else "cap_crossover")
    r = t[(t.stratum == stratum) & (t.arm_role == role) & (t.statistic == stat)]
    assert len(r) == 1, f"{len(r)} rows"
    return r.iloc[0]


def cap_contrast(study, stratum, role):
    r = cap_row(study, stratum, role)
    return f"{f1(r.estimate_pp)} {ci(r.ci_low_pp, r.ci_high_pp)}"


def strata_counts(study):
    t = rd(study, f"{study}_strata")
    t = t[t.in_study.fillna(False).astype(bool) | t.selected.fillna(False).astype(bool)]
    return ", ".join(f"{k}: {v}" for k, v in t.groupby("stratum").configuration.apply(lambda s: len(s)).items())


safe(S, "Configurations per stratum", "B 6 (every configuration ≥ 20%), M 1, N 1 (Appendix E.1)",
     lambda: strata_counts("sweep"), "sweep_strata.parquet `stratum` where `in_study`/`selected`")


def b_trunc(study, low_role="low", high_role="high"):
    t = rd(study, "cap_sweep_configurations" if study == "sweep" else "cap_crossover_configurations")
    b = t[t.stratum == "B"]
    lo, hi = b[b.arm_role == low_role].truncated_share_v128, b[b.arm_role == high_role].truncated_share_v128
    return f"low cap {pct(lo.min())}–{pct(lo.max())}; high cap {pct(hi.min())}–{pct(hi.max())}"


safe(S, "Stratum B's V = 128 truncation at the low and high caps",
     "30.6–69.8% at 1,024; at most 1.4% at 16,384 (Appendix E.1)", lambda: b_trunc("sweep"),
     "cap_sweep_configurations.parquet stratum=B `truncated_share_v128`")
safe(S, "Stratum B menu contrast at 1,024", "−43.7 (Appendix E.1; Figure 2b)", lambda: cap_contrast("sweep", "B", "low"),
     "cap_sweep.parquet stratum=B, arm_role=low, statistic=v_contrast")
safe(S, "Stratum B menu contrast at 16,384", "−2.7 [−4.7, −0.9] (Appendix E.1)", lambda: cap_contrast("sweep", "B", "high"),
     "cap_sweep.parquet stratum=B, arm_role=high")
safe(S, "Stratum B interaction (change), clears the 5 pp margin",
     "+41.0 [36.2, 45.5], clears the margin (Appendix E.1)",
     lambda: (lambda r: f"{f1(r.estimate_pp)} {ci(r.ci_low_pp, r.ci_high_pp)}, clears margin: {r.clears_margin}")(cap_row("sweep", "B", "change")),
     "cap_sweep.parquet stratum=B, arm_role=change: `estimate_pp`, `clears_margin`")
safe(S, "Mild stratum M: move of the menu contrast", "2.8 pp (Appendix E.1: \"strata M and N move by 2.8 and 1.0 pp\")",
     lambda: cap_contrast("sweep", "M", "change"), "cap_sweep.parquet stratum=M, arm_role=change")
safe(S, "Null stratum N: move of the menu contrast", "1.0 pp (Appendix E.1)",
     lambda: cap_contrast("sweep", "N", "change"), "cap_sweep.parquet stratum=N, arm_role=change")
safe(S, "Repeats disagree (all strata) at 1,024",
     "17.5% at 1,024 tokens (Limitations: \"the sweep repeats (17.5% at 1,024 tokens)\")",
     lambda: (lambda a, b: f"{a.estimate_pp:.1f}% at 1,024; {b.estimate_pp:.1f}% at 16,384")(
         cap_row("sweep", "all", "low", "repeat_disagreement"), cap_row("sweep", "all", "high", "repeat_disagreement")),
     "cap_sweep.parquet stratum=all, statistic=repeat_disagreement")


def same_rows(a_study, a_filter, b_study, b_filter, keys=("configuration", "variant_id")):
    a = a_filter(rd(a_study, "episodes"))
    b = b_filter(rd(b_study, "episodes"))
    m = a.merge(b, on=list(keys), suffixes=("_a", "_b"))
    same = ((m.vts_a == m.vts_b) & (m.total_tokens_a == m.total_tokens_b) & (m.calls_a == m.calls_b)
            & (m.terminal_flag_a.fillna("") == m.terminal_flag_b.fillna("")))
    keys_eq = int((m.episode_key_a == m.episode_key_b).sum())
    return (f"{int(same.sum())} of {len(m)} matched rows identical (vts, total_tokens, calls, terminal_flag); "
            f"{keys_eq} share the episode key")


safe(S, "Independence of studies: sweep repeat 0 at 1,024 vs capacity's routed lane",
     "— (the paper's studies are separate runs, so no row repeats another)",
     lambda: same_rows("sweep", lambda e: e[(e.completion_cap == 1024) & (e.repeat == 0)],
                       "capacity", lambda e: e[e.lane == "routed"]),
     "episodes.parquet of both studies, joined on configuration × variant")

# ---------------------------------------------------------------- crossover -------
S = "crossover"
safe(S, "Configurations per stratum", "B 2, S 1, N 1 (Appendix E.2)", lambda: strata_counts("crossover"),
     "crossover_strata.parquet")
safe(S, "Stratum B's V = 128 truncation at 1,024 and 4,096",
     "28.8–35.8% at 1,024; 20.2–25.3% at 4,096 (above the 5% ceiling) (Appendix E.2)", lambda: b_trunc("crossover"),
     "cap_crossover_configurations.parquet stratum=B `truncated_share_v128`")
safe(S, "Stratum B menu contrast at 1,024 / 4,096",
     "−23.6 [−28.5, −18.8] / −21.3 [−26.7, −16.1] (Appendix E.2; Table 7, Figure 8)",
     lambda: f"{cap_contrast('crossover', 'B', 'low')} / {cap_contrast('crossover', 'B', 'high')}",
     "cap_crossover.parquet stratum=B, arm_role=low/high")
safe(S, "Stratum B interaction; either-outcome bounds",
     "+2.1 [−2.6, 6.8]; bounds [1.9, 2.6] (Appendix E.2)",
     lambda: (lambda r: f"{f1(r.estimate_pp)} {ci(r.ci_low_pp, r.ci_high_pp)}; bounds {ci(r.bound_low_pp, r.bound_high_pp)}")(
         cap_row("crossover", "B", "change")), "cap_crossover.parquet stratum=B, arm_role=change")
safe(S, "Stratum S: move of the menu contrast",
     "+1.4 [−8.3, 11.1]; S \"truncates heavily at both caps yet shows no menu penalty\" (Appendix E.2)",
     lambda: cap_contrast("crossover", "S", "change") + " (low cap " + cap_contrast("crossover", "S", "low") + "; V = 128 truncation "
     + f"{cap_row('crossover', 'S', 'low', 'truncated_share_v128').estimate_pp:.1f}% → {cap_row('crossover', 'S', 'high', 'truncated_share_v128').estimate_pp:.1f}%)",
     "cap_crossover.parquet stratum=S")
safe(S, "Stratum N: move", "−0.3 [−4.5, 3.8] (Appendix E.2)", lambda: cap_contrast("crossover", "N", "change"),
     "cap_crossover.parquet stratum=N, arm_role=change")
safe(S, "Repeats disagree at 1,024 / 4,096", "24.2% / 21.2% (Appendix E.2)",
     lambda: f"{cap_row('crossover', 'all', 'low', 'repeat_disagreement').estimate_pp:.1f}% / "
             f"{cap_row('crossover', 'all', 'high', 'repeat_disagreement').estimate_pp:.1f}%",
     "cap_crossover.parquet stratum=all, statistic=repeat_disagreement")


def kept():
    t = rd("crossover", "cap_crossover_configurations")
    e = rd("crossover", "episodes")
    exc = int(t.excluded_provider_failure.sum() + t.excluded_missing_usage.sum())
    return f"{len(e) - exc} of {len(e)} kept"


safe(S, "Rows kept", "6,904 of 6,912 (8 provider failure or missing usage) (Appendix E.2)", kept,
     "episodes.parquet row count; cap_crossover_configurations.parquet `excluded_*`")
safe(S, "Independence of studies: crossover at 1,024 vs sweep at 1,024 (same repeat)",
     "— (the paper's crossover and sweep are separate runs)",
     lambda: same_rows("crossover", lambda e: e[e.completion_cap == 1024], "sweep",
                       lambda e: e[e.completion_cap == 1024], keys=("configuration", "variant_id", "repeat")),
     "episodes.parquet of both studies, joined on configuration × variant × repeat")

# ------------------------------------------------------------------ repairs -------
S = "repairs"


def rep(layer, repair):
    t = rd(S, "repairs")
    r = t[(t.layer == layer) & (t.repair == repair)].iloc[0]
    s = (f"L {f1(r.l_pp)} {ci(r.l_pp_ci_low, r.l_pp_ci_high)}, Γ {f1(r.gamma_pp)}, Σ {f1(r.sigma_pp)} "
         f"{ci(r.sigma_pp_ci_low, r.sigma_pp_ci_high)}, activates: {r.activates}")
    if not pd.isna(r.tost_margin_pp):
        s += f", margin {r.tost_margin_pp:.1f}"
    return s


safe(S, "Routed menu (V)", "L 17.5 [14.9, 20.2], Σ 4.9 [2.2, 7.5] (§4.3 results paragraph)",
     lambda: rep("V", "routed_menu"), "repairs.parquet layer=V, repair=routed_menu: `l_pp`, `gamma_pp`, `sigma_pp`, `activates`")
safe(S, "Workflow prompt (W)", "L 2.4 [−0.4, 5.0], Σ 0.0 [−2.4, 2.4], equivalence margin 3.6 (§4.3)",
     lambda: rep("W", "workflow_prompt"), "repairs.parquet layer=W, repair=workflow_prompt (+ `tost_margin_pp`)")
safe(S, "Interface guide (D)", "L 1.5 [−0.1, 3.1], Σ 0.7 [−1.7, 3.1], equivalence margin 1.7 (§4.3)",
     lambda: rep("D", "interface_guide"), "repairs.parquet layer=D, repair=interface_guide")
safe(S, "Router (R)", "activates (\"the router by construction\"; no L/Σ printed) (Conclusions; §4.3)",
     lambda: rep("R", "router"), "repairs.parquet layer=R, repair=router")


def sw():
    line = lambda t, k: f"{k} {int(t.loc[k].success_superior)}/{int(t.loc[k].pareto_nondominated)}/{int(t.loc[k].cost_superior)} of {int(t.loc[k].n_incumbents)}"
    t = rd(S, "switch_summary").set_index("repair")
    out = [line(t, k) for k in ["router", "routed", "workflow", "guide"]]
    # The controller runs in the holdout study (at 30 required calls).
    out.append(line(rd("holdout", "switch_summary").set_index("repair"), "controller"))
    return "; ".join(out)


safe(S, "Repair vs switch: success-superior / nondominated / cost-superior",
     "router 21/21/0 of 21; routed 0/9/1 of 21; workflow 0/10/1 of 20; guide 0/9/1 of 20; controller 17/17/4 of 17 (§4.3 switch paragraph)",
     sw, "switch_summary.parquet of repairs; the controller's of holdout (stressed = { depth = 30 })")


def fjord_wf():
    e = rd(S, "episodes")
    e = e[(e.configuration == "sim-fjord-pro") & (e.v == 128) & (e.arm.isin(["fixed", "workflow"]))]
    g = e.groupby(["r", "arm"]).vts.mean().unstack("arm")
    lo = g.loc["low"]
    c = e[(e.w == "low") & (e.d == "raw") & (e.r == "low")].groupby("arm").vts.mean()
    return (f"{100 * (lo.workflow - lo.fixed):+.1f} over the 4 V = 128 endpoint cells (R low, 144 pairs); "
            f"{100 * (c.workflow - c.fixed):+.1f} at (128, low, raw) alone")


safe(S, "sim-fjord-pro's workflow-prompt effect at V = 128",
     "— (a panel configuration; the paper has no such figure)", fjord_wf,
     "computed from episodes.parquet, configuration=sim-fjord-pro, arms workflow vs fixed")

# ----------------------------------------------------------------- sentinel -------
S = "sentinel"


def sent():
    t = rd(S, "sentinel")
    a = t[t.scope == "all"].iloc[0]
    return (f"{int(a.n_groups)} groups ({int(a.n_runs)} rows), {int(a.n_configurations)} configurations, {int(a.n_families)} families; "
            f"pass@1 {pct(a.pass_at_1)}, all runs {pct(a.all_runs)}, any run {pct(a.any_run)}, disagreement {pct(a.disagreement)}")


safe(S, "Sentinel repeats: pass@1 / all three / any / run-to-run disagreement",
     "480 groups (1,440 rows), 20 configurations, 4 families: 89.7% / 82.7% / 94.8% / 12.1% (§4.3 sentinel paragraph)",
     sent, "sentinel.parquet scope=all")


def sgain(scope):
    r = rd(S, "sentinel")
    r = r[r.scope == scope].iloc[0]
    return f"{f1(r.gain_pp)} {ci(r.gain_pp_ci_low, r.gain_pp_ci_high)} (disagreement {pct(r.disagreement)})"


safe(S, "Repeated gain: routed menu", "+7.1 [2.5, 11.7] (§4.3)", lambda: sgain("V"), "sentinel.parquet scope=V `gain_pp`")
safe(S, "Repeated gain: workflow prompt", "−1.2 [−2.5, 0.0] (§4.3)", lambda: sgain("W"), "sentinel.parquet scope=W")
safe(S, "Repeated gain: interface guide", "−0.4 [−3.3, 2.5] (§4.3)", lambda: sgain("D"), "sentinel.parquet scope=D")

# ------------------------------------------------------------------ holdout -------
S = "holdout"


def hold(pop, layer, repair):
    t = rd(S, "holdout")
    return t[(t.population == pop) & (t.layer == layer) & (t.repair == repair)].iloc[0]


def raw_only():
    e = rd(S, "episodes")
    e = e[e.d == "raw"]
    m = e.groupby(["arm", "depth"]).vts.mean()
    L = 100 * (m[("baseline", 2)] - m[("baseline", 30)])
    sig = 100 * ((m[("controller", 30)] - m[("baseline", 30)]) - (m[("controller", 2)] - m[("baseline", 2)]))
    return L, sig


safe(S, "Controller, all configurations: L and Σ",
     "L 96.1 [93.6, 98.0], Σ 95.1 [92.6, 97.3] (raw cells only; 17 configurations) (holdout paragraph; Table 10)",
     lambda: (lambda r, ro: f"L {f1(r.l_pp)} {ci(r.l_pp_ci_low, r.l_pp_ci_high)}, Σ {f1(r.sigma_pp)} {ci(r.sigma_pp_ci_low, r.sigma_pp_ci_high)} "
              f"(raw + compact, {int(r.n_configurations)} configurations); raw cells only: L {f1(ro[0])}, Σ {f1(ro[1])}")(
         hold("all", "depth", "controller"), raw_only()),
     "holdout.parquet population=all, layer=depth, repair=controller; raw-only point estimates computed from episodes.parquet (d=raw)")
safe(S, "Controller, confirmatory configurations: Γ and Δ",
     "Γ 95.8 [89.6, 100.0], Δ 93.8 [85.4, 102.1] (holdout paragraph)",
     lambda: (lambda r: f"Γ {f1(r.gamma_pp)} {ci(r.gamma_pp_ci_low, r.gamma_pp_ci_high)}, Δ {f1(r.delta_pp)} {ci(r.delta_pp_ci_low, r.delta_pp_ci_high)}, "
              f"activates {r.activates}")(hold("confirmatory", "depth", "controller")),
     "holdout.parquet population=confirmatory, layer=depth, repair=controller")
safe(S, "Wrong-layer control (canonical delivery, layer D): L and Γ",
     "L −1.2 [−3.7, 1.2], Γ −0.2 [−2.5, 1.7] (holdout paragraph)",
     lambda: (lambda r: f"L {f1(r.l_pp)} {ci(r.l_pp_ci_low, r.l_pp_ci_high)}, Γ {f1(r.gamma_pp)} {ci(r.gamma_pp_ci_low, r.gamma_pp_ci_high)}")(
         hold("all", "D", "canonical_delivery")), "holdout.parquet population=all, layer=D, repair=canonical_delivery")


def harms():
    t = rd(S, "holdout_arms").set_index(["arm", "depth"])
    b2, c2, b30, c30 = t.loc[("baseline", 2)], t.loc[("controller", 2)], t.loc[("baseline", 30)], t.loc[("controller", 30)]
    return (f"2 calls: baseline {pct(b2.vts)}, controller {pct(c2.vts)}; 30 calls: baseline {b30.calls_per_episode:.1f} calls in "
            f"{b30.requests_per_episode:.1f} requests; controller {c30.calls_per_episode:.1f} calls ({c30.controller_calls_per_episode:.1f} "
            f"by the controller) in {c30.requests_per_episode:.1f} requests")


safe(S, "Per arm (Table 10)",
     "2 calls: baseline 96.7%, controller 97.4%; 30 calls: baseline 18.9 calls in 19.8 requests; controller 29.9 calls (28.7 by it) in 2.2 requests (Table 10)",
     harms, "holdout_arms.parquet")
safe(S, "Configurations / rows", "17 configurations, 3,672 rows (holdout paragraph)",
     lambda: f"{rd(S, 'episodes').configuration.nunique()} configurations, {len(rd(S, 'episodes'))} rows", "episodes.parquet")

# ---------------------------------------------------------------- discovery -------
S = "discovery"


def disc():
    t = rd(S, "discovery")
    t = t[t.cluster_unit == "required_tools"]
    n = int(t[t.statistic == "itt_success"].n_clusters.iloc[0])
    un = int(t[(t.statistic == "availability") & t.r.isin(["low", "high"])].unavailable.fillna(0).sum())
    return f"{n} clusters; {un} episodes stopped for lack of availability (0 requests, 0 tokens)"


safe(S, "Required-tool clusters; episodes stopped for lack of availability",
     "18 clusters; 1,113 rows stopped for lack of availability before any request (of 1,118 zero-token rows) (methods; Appendix)",
     disc, "discovery.parquet cluster_unit=required_tools: `n_clusters`, `unavailable`")


def disc_r():
    t = rd(S, "discovery")
    t = t[(t.cluster_unit == "required_tools") & (t.statistic == "itt_success") & (t.r == "high_minus_low")].set_index("arm")
    return "; ".join(f"{a} {f1(t.loc[a].estimate_pp)} {ci(t.loc[a].ci_low_pp, t.loc[a].ci_high_pp)}" for a in t.index)


safe(S, "R contrast of ITT success (high − low) per arm", "not published as numbers (the report says so)", disc_r,
     "discovery.parquet statistic=itt_success, r=high_minus_low")

# ----------------------------------------------------------------- frontier -------
S = "frontier"


def fr():
    t = rd(S, "frontier").set_index("depth")
    return "; ".join(f"2→{d}: {f1(t.loc[d].contrast_pp)} {ci(t.loc[d].ci_low_pp, t.loc[d].ci_high_pp)}" for d in [6, 14, 30])


safe(S, "Change in VTS from 2 calls", "2→6 −3.8 [−8.8, 2.5]; 2→14 −6.2 [−12.5, 1.2]; 2→30 −91.2 [−95.0, −83.8] (frontier paragraph)",
     fr, "frontier.parquet `contrast_pp`, `ci_*` by depth")


def fr30():
    t = rd(S, "frontier").set_index("depth")
    r, r14 = t.loc[30], t.loc[14]
    return (f"30 calls: {int(r.within_budget)} within budget ({int(r.within_budget_failed)} failed, {int(r.within_budget_infeasibility)} infeasibility); "
            f"median calls {r.calls_median:.0f} [{r.calls_q1:.0f}–{r.calls_q3:.0f}], median tokens {r.total_tokens_median:,.0f}; "
            f"budget/call limit/neither first {int(r.budget_first)}/{int(r.call_limit_first)}/{int(r.neither_limit)}; "
            f"14 calls: median prompt {r14.prompt_tokens_median:,.0f}, over budget {int(r14.n_episodes - r14.within_budget)}")


safe(S, "30- and 14-call details",
     "30 calls: 11 within budget (all fail, 9 infeasibility); median 20 calls [18–22], 132,392 tokens; budget before call limit (Figure 9); 14 calls: median prompt 79,898, none over budget (frontier paragraph)",
     fr30, "frontier.parquet depth=30 and 14")
safe(S, "Configurations", "20 (Qwen3.8 Flash has no frontier rows) (methods)",
     lambda: f"{rd(S, 'episodes').configuration.nunique()}", "episodes.parquet")

# -------------------------------------------------------------------- pilot -------
S = "pilot"


def pil(action, col="success"):
    t = rd(S, "pilot").set_index("action")
    return t.loc[action, col]


safe(S, "Probe success", "127 of 192 (66.1%) (pilot paragraph)",
     lambda: f"{round(pil('probe') * 192)} of 192 ({pct(pil('probe'))})", "pilot.parquet action=probe `success`")
safe(S, "Success per action over 192 blocks",
     "retry 67.7%, router 78.6%, combined 81.8%, trace selector 97.9%, switch 99.0% (Table 13)",
     lambda: ", ".join(f"{a} {pct(pil(a))}" for a in ["retry", "cap4096", "router", "controller", "canonical", "combined", "trace_selector", "switch"]),
     "pilot.parquet `success`")
safe(S, "Switching vs combined repairs", "switch 99.0% above combined 81.8% (Table 13)",
     lambda: f"switch {pct(pil('switch'))} {'above' if pil('switch') > pil('combined') else 'below'} combined {pct(pil('combined'))}",
     "pilot.parquet `success`")
safe(S, "After a failed probe",
     "65 failed probes: retry 24.6%, cap 41.5%, router 61.5%, combined 66.2%, switch 98.5% (Table 13)",
     lambda: f"{int(pil('probe', 'n_failed_probe'))} failed probes: " + ", ".join(
         f"{a} {pct(pil(a, 'success_after_failed_probe'))}" for a in ["retry", "cap4096", "router", "combined", "switch"]),
     "pilot.parquet `success_after_failed_probe`, `n_failed_probe`")
safe(S, "Policy (keep a successful probe, act after a failure)", "combined 88.5%, switch 99.5% (Table 13)",
     lambda: f"combined {pct(pil('combined', 'policy_success'))}, switch {pct(pil('switch', 'policy_success'))}",
     "pilot.parquet `policy_success`")
safe(S, "Trace selector − switch", "−1.0 [−2.6, 0.0] pp (pilot paragraph)",
     lambda: f"{f1(pil('trace_selector', 'vs_switch_pp'))} {ci(pil('trace_selector', 'vs_switch_ci_low_pp'), pil('trace_selector', 'vs_switch_ci_high_pp'))}",
     "pilot.parquet action=trace_selector `vs_switch_*`")
safe(S, "Cost per 1,000 conditions, probe charged",
     "USD 4.49 trace selection, 4.62 probe then switch; 1.94 switching without a probe (provider prices) (pilot paragraph)",
     lambda: f"USD {pil('trace_selector', 'cost_per_1000_usd'):.2f} trace selection, {pil('switch', 'cost_per_1000_usd'):.2f} probe + switch, "
             f"{pil('switch', 'action_cost_per_1000_usd'):.2f} switch alone (the simulated catalogue's prices)",
     "pilot.parquet `cost_per_1000_usd`, `action_cost_per_1000_usd`")

# -------------------------------------------------------------------- print -------
print("| Study | Quantity | Paper (where) | Panel | Source (table / column) |")
print("| :--- | :--- | :--- | :--- | :--- |")
for r in ROWS:
    print("| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |")
