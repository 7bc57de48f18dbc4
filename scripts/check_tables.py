"""Reads every table a study wrote with pyarrow and checks the notebook contract.

    python3 scripts/check_tables.py outputs/smoke

Checks, for every outputs/<study>/*.parquet: it reads; it carries tbb.version,
tbb.manifest_hash, tbb.lockfile_hash and tbb.node_key in its key-value metadata;
and the contract's tables (docs/architecture.md, "The table contract") hold at
least their columns, with one episodes row per scored condition, and an
infrastructure failure exactly where a row has a cause (`infra_error`) and the
flag `infra_failure`; the requests table has one row per request the episodes
count (their `requests` column), each episode's requests numbered from 0 with its
last `cumulative_tokens` equal to its `total_tokens`, and a known `response_kind`
wherever a response came (a `finish_reason`); in the first_responses table the four
ways a cut ended add up to `cut`, and each cap's pooled row (`configuration` "all")
is the sum of its configurations' rows. Exits 1 naming every problem.
"""

import pathlib
import sys

import pyarrow.parquet as pq

CONTRACT = {
    "variants": """variant_id family intent domain v w d r depth certified_min_calls
        call_limit turn_limit menu_size n_operational_tools answer_json sources_json
        variant_hash required_tool_kinds""",
    "discovery": """arm lane statistic r cluster_unit n_clusters n hits estimate_pp
        ci_low_pp ci_high_pp p_value p_floor draws seed draw_seed unavailable
        unavailable_requests unavailable_tokens""",
    "episodes": """study configuration organization model route quantization reasoning_effort block arm lane repair
        delivery actor completion_cap repeat schedule schedule_position variant_id family intent v w d r depth vts ok_a ok_s
        ok_p ok_q ok_e ok_x ok_g ok_b ok_c first_unmet terminal_flag truncated
        truncated_before_first_call calls calls_by_controller requests schema_exposures turns
        prompt_tokens completion_tokens reasoning_tokens total_tokens cost_usd wall_ms
        infra_failure infra_error infra_http_status infra_attempts sent_temperature
        sent_seed sent_parallel_tool_calls stop_reason episode_key transcript_ref node_key""",
    "contrasts": """analysis contrast cluster_unit n_units estimate_pp ci_low_pp
        ci_high_pp p_value p_holm draws seed""",
    "repairs": """completion_cap layer pressure repair role repair_arm no_repair_arm
        cells n_cells n_families n_configurations n_episodes_per_arm estimable note
        l_pp l_pp_ci_low l_pp_ci_high gamma_pp gamma_pp_ci_low gamma_pp_ci_high
        sigma_pp sigma_pp_ci_low sigma_pp_ci_high delta_pp delta_pp_ci_low
        delta_pp_ci_high p_iut p_holm activates tost_margin_pp draws seed""",
    "sentinel": """completion_cap scope repair cells n_groups n_runs runs_min runs_max
        pass_at_1 all_runs any_run disagreement gain_pp gain_pp_ci_low gain_pp_ci_high
        draws seed""",
    "cap_sweep": """stratum arm arm_role completion_cap statistic n_configurations
        n_units units_incomplete n_clusters n_events n_total estimate_pp ci_low_pp
        ci_high_pp p_value excluded_provider_failure excluded_missing_usage bound_low_pp
        bound_high_pp draws seed draw_seed margin_pp clears_margin within_margin""",
    "cap_crossover": """stratum arm arm_role completion_cap statistic n_configurations
        n_units units_incomplete n_clusters n_events n_total estimate_pp ci_low_pp
        ci_high_pp p_value excluded_provider_failure excluded_missing_usage bound_low_pp
        bound_high_pp draws seed draw_seed truncation_persists reading""",
    "cap_sweep_configurations": """configuration organization stratum selected arm
        arm_role completion_cap episodes_v128 truncated_v128 truncated_share_v128
        excluded_provider_failure excluded_missing_usage manipulation_check_passed
        in_pooled_estimate""",
    "cap_crossover_configurations": """configuration organization stratum selected arm
        arm_role completion_cap episodes_v128 truncated_v128 truncated_share_v128
        excluded_provider_failure excluded_missing_usage manipulation_check_passed
        in_pooled_estimate""",
    "requests": """study episode_key transcript_ref configuration block arm lane repair
        delivery actor completion_cap repeat schedule schedule_position variant_id
        family v w d r depth turn visible_schemas prompt_tokens cached_tokens
        completion_tokens reasoning_tokens reasoning_source finish_reason
        finish_reason_raw response_kind executed_call cumulative_calls attempts
        infra_cause wall_ms cumulative_tokens""",
    "first_responses": """completion_cap configuration organization visible_schemas
        configurations first_responses infra_failed cut cut_share reasoning_only
        reasoning_only_share cut_in_tool_call cut_in_tool_call_share cut_in_text
        cut_in_text_share cut_empty never_truncating""",
}
KINDS = {"tool_call", "answer", "reasoning_only", "cut_in_tool_call", "cut_in_text", "empty"}
PROVENANCE = [b"tbb.version", b"tbb.manifest_hash", b"tbb.lockfile_hash", b"tbb.node_key"]
CONDITION = ["block", "configuration", "variant_id", "arm", "completion_cap", "repeat"]


def check_requests(root: pathlib.Path, requests) -> list:
    """The requests table against the episodes table: the same episodes, one row per
    request, turns from 0, the last cumulative tokens equal to the episode's total."""
    problems = []
    episodes_path = root / "episodes.parquet"
    if not episodes_path.exists():
        return problems
    episodes = pq.read_table(episodes_path)
    if any(c not in episodes.column_names for c in CONDITION + ["requests", "total_tokens"]):
        return problems
    expected = {}
    for row in zip(*(episodes.column(c).to_pylist() for c in CONDITION + ["requests", "total_tokens"])):
        if row[-2] > 0:
            expected[tuple(row[:-2])] = (row[-2], row[-1])
    seen = {}
    columns = CONDITION + ["turn", "cumulative_tokens", "finish_reason", "response_kind"]
    for i, row in enumerate(zip(*(requests.column(c).to_pylist() for c in columns))):
        key, turn, tokens, finish, kind = tuple(row[:-4]), *row[-4:]
        count, _ = seen.get(key, (0, 0))
        if turn != count:
            problems.append(f"requests row {i}: turn {turn}, expected {count} for {key}")
        seen[key] = (count + 1, tokens)
        if (finish is None) != (kind is None) or (kind is not None and kind not in KINDS):
            problems.append(f"requests row {i}: finish_reason {finish!r}, response_kind {kind!r}")
    if seen != expected:
        wrong = sorted(set(seen.items()) ^ set(expected.items()))[:3]
        problems.append(
            f"requests: {sum(n for n, _ in seen.values())} rows over {len(seen)} episodes, "
            f"the episodes count {sum(n for n, _ in expected.values())} over {len(expected)}; "
            f"first differences (condition, (requests, total tokens)): {wrong}"
        )
    return problems


FIRST_COUNTS = """configurations first_responses infra_failed cut reasoning_only
    cut_in_tool_call cut_in_text cut_empty never_truncating""".split()


def check_first_responses(table) -> list:
    """Each row's cut splits into its four endings; each pooled row sums its cap's
    configuration rows."""
    problems = []
    rows = table.to_pylist()
    for i, r in enumerate(rows):
        parts = r["reasoning_only"] + r["cut_in_tool_call"] + r["cut_in_text"] + r["cut_empty"]
        if parts != r["cut"] or r["cut"] + r["infra_failed"] > r["first_responses"]:
            problems.append(f"first_responses row {i}: the counts do not add up: {r}")
    for pooled in (r for r in rows if r["configuration"] == "all"):
        mine = [r for r in rows if r["configuration"] != "all" and r["completion_cap"] == pooled["completion_cap"]]
        for c in FIRST_COUNTS:
            if pooled[c] != sum(r[c] for r in mine):
                problems.append(f"first_responses: pooled {c} at cap {pooled['completion_cap']} is not the sum of its rows")
    return problems


def main(directory: str) -> int:
    root = pathlib.Path(directory)
    problems = []
    tables = sorted(root.glob("*.parquet"))
    names = {t.stem for t in tables}
    for required in ("variants", "episodes", "requests"):
        if required not in names:
            problems.append(f"{root}/{required}.parquet is missing")
    for path in tables:
        table = pq.read_table(path)
        meta = table.schema.metadata or {}
        for key in PROVENANCE:
            if not meta.get(key):
                problems.append(f"{path}: no {key.decode()} in the metadata")
        wanted = CONTRACT.get(path.stem, "").split()
        missing = [c for c in wanted if c not in table.column_names]
        if missing:
            problems.append(f"{path}: missing columns {missing}")
        if path.stem == "episodes" and not missing:
            keys = set(zip(*(table.column(c).to_pylist() for c in CONDITION)))
            if len(keys) != table.num_rows:
                problems.append(f"{path}: {table.num_rows} rows but {len(keys)} conditions")
            rows = zip(
                table.column("infra_failure").to_pylist(),
                table.column("infra_error").to_pylist(),
                table.column("terminal_flag").to_pylist(),
            )
            for i, (failed, cause, flag) in enumerate(rows):
                if failed != (cause is not None) or failed != (flag == "infra_failure"):
                    problems.append(
                        f"{path}: row {i} has infra_failure={failed}, "
                        f"infra_error={cause!r}, terminal_flag={flag!r}"
                    )
        if path.stem == "requests" and not missing:
            problems.extend(check_requests(root, table))
        if path.stem == "first_responses" and not missing:
            problems.extend(check_first_responses(table))
        print(f"{path.name}: {table.num_rows} rows, {table.num_columns} columns")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "outputs/smoke"))
