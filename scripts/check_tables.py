"""Reads every table a study wrote with pyarrow and checks the notebook contract.

    python3 scripts/check_tables.py outputs/smoke

Checks, for every outputs/<study>/*.parquet: it reads; it carries tbb.version,
tbb.manifest_hash, tbb.lockfile_hash and tbb.node_key in its key-value metadata;
and the contract's tables (docs/architecture.md, "The table contract") hold at
least their columns, with one episodes row per scored condition, and an
infrastructure failure exactly where a row has a cause (`infra_error`) and the
flag `infra_failure`. Exits 1 naming every problem.
"""

import pathlib
import sys

import pyarrow.parquet as pq

CONTRACT = {
    "variants": """variant_id family intent domain v w d r depth certified_min_calls
        call_limit turn_limit menu_size n_operational_tools answer_json sources_json
        variant_hash""",
    "episodes": """study configuration organization model route block arm lane repair
        delivery actor completion_cap repeat schedule schedule_position variant_id family intent v w d r depth vts ok_a ok_s
        ok_p ok_q ok_e ok_x ok_g ok_b ok_c first_unmet terminal_flag truncated
        truncated_before_first_call calls requests schema_exposures turns
        prompt_tokens completion_tokens reasoning_tokens total_tokens cost_usd wall_ms
        infra_failure infra_error infra_http_status infra_attempts sent_temperature
        sent_seed sent_parallel_tool_calls stop_reason transcript_ref node_key""",
    "contrasts": """analysis contrast cluster_unit n_units estimate_pp ci_low_pp
        ci_high_pp p_value p_holm draws seed""",
}
PROVENANCE = [b"tbb.version", b"tbb.manifest_hash", b"tbb.lockfile_hash", b"tbb.node_key"]
CONDITION = ["block", "configuration", "variant_id", "arm", "completion_cap", "repeat"]


def main(directory: str) -> int:
    root = pathlib.Path(directory)
    problems = []
    tables = sorted(root.glob("*.parquet"))
    names = {t.stem for t in tables}
    for required in ("variants", "episodes"):
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
        print(f"{path.name}: {table.num_rows} rows, {table.num_columns} columns")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "outputs/smoke"))
