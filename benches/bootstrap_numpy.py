#!/usr/bin/env python3
"""The capacity contrasts' cluster bootstraps, vectorised in numpy: the reference the
Rust implementation (crates/analysis/src/common/stats.rs, capacity/contrasts.rs) is benchmarked against.

Run by `cargo bench --bench analysis`, which writes the rows and compares; or alone:

    python3 benches/bootstrap_numpy.py ROWS.csv [--draws 10000] [--rounds 15] [--warmup 1]

ROWS.csv has one row per routed, no-repair capacity episode: family, intent, domain,
configuration, organization, v, w, d, vts (0/1; infrastructure failures already 0).

The same computation as the Rust code, in the idiomatic vectorised form:
  prepare    rows -> (family x configuration) unit x cell means (np.unique,
             np.bincount) -> the eight contrasts' unit values (a matrix product with
             the paper's weights, in percentage points);
  bootstrap  for family, intent and configuration clusters and each contrast:
             per-cluster sums and counts precomputed (np.bincount), all draws as one
             (draws x clusters) integer matrix from its own generator, estimates as
             row sums of gathered sums over gathered counts, the 2.5/97.5 percentiles
             (numpy's default linear interpolation, as in Rust), the centered two-sided
             p with its 1/draws floor, Holm over the eight.
The random streams differ from Rust's (numpy's PCG64 here, ChaCha8 there), so the
intervals agree only up to Monte Carlo error; the point estimates agree exactly.

Prints one JSON object: medians and minimums of the timed phases in ms, and the point
estimates.
"""

import argparse
import csv
import json
import time

import numpy as np

CELLS = [
    (8, "low", "raw"),
    (8, "low", "linked"),
    (8, "high", "raw"),
    (8, "high", "linked"),
    (128, "low", "raw"),
    (128, "low", "linked"),
    (128, "high", "raw"),
    (128, "high", "linked"),
    (32, "low", "raw"),
    (8, "medium", "raw"),
    (8, "low", "compact"),
    (8, "low", "typed"),
]
CONTRASTS = ["v", "w", "d_linked", "v_x_w", "v_x_d", "w_x_d", "d_compact", "d_typed"]
UNITS = ["family", "intent", "configuration"]


def weights():
    """The (8 x 12) contrast weights of Appendix D."""
    w = np.zeros((8, 12))
    s = np.array([[(i >> bit) & 1 for i in range(8)] for bit in (2, 1, 0)]) * 2.0 - 1.0
    sv, sw, sd = s
    w[0, :8], w[1, :8], w[2, :8] = sv / 4, sw / 4, sd / 4
    w[3, :8], w[4, :8], w[5, :8] = sv * sw / 2, sv * sd / 2, sw * sd / 2
    w[6, 10], w[6, 0] = 1.0, -1.0
    w[7, 11], w[7, 0] = 1.0, -1.0
    return w


def holm(p):
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adjusted = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(adjusted)
    return out


def prepare(cols, w):
    unit_key = np.char.add(np.char.add(cols["family"], "|"), cols["configuration"])
    units, first, unit_id = np.unique(unit_key, return_index=True, return_inverse=True)
    cell_key = np.char.add(np.char.add(cols["v"], "|"), np.char.add(np.char.add(cols["w"], "|"), cols["d"]))
    lookup = {f"{v}|{a}|{b}": i for i, (v, a, b) in enumerate(CELLS)}
    keys, key_id = np.unique(cell_key, return_inverse=True)
    cell_of_key = np.array([lookup.get(k, -1) for k in keys])
    cell = cell_of_key[key_id]
    keep = cell >= 0
    flat = unit_id[keep] * 12 + cell[keep]
    n = len(units) * 12
    sums = np.bincount(flat, weights=cols["vts"][keep], minlength=n)
    counts = np.bincount(flat, minlength=n)
    if (counts == 0).any():
        raise SystemExit("a unit lacks a capacity cell")
    means = (sums / counts).reshape(len(units), 12)
    diffs = 100.0 * means @ w.T  # units x 8
    attrs = {u: cols[u][first] for u in UNITS}
    return diffs, attrs


def bootstrap(diffs, attrs, draws, seed):
    out = {}
    for ui, unit in enumerate(UNITS):
        _, cl = np.unique(attrs[unit], return_inverse=True)
        n = cl.max() + 1
        counts = np.bincount(cl, minlength=n).astype(float)
        rows = []
        for ci, name in enumerate(CONTRASTS):
            sums = np.bincount(cl, weights=diffs[:, ci], minlength=n)
            theta = sums.sum() / counts.sum()
            rng = np.random.default_rng([seed, ui, ci])
            idx = rng.integers(0, n, size=(draws, n))
            est = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
            lo, hi = np.percentile(est, [2.5, 97.5])
            p = max(np.mean(np.abs(est - theta) >= abs(theta) * (1 - 1e-9)), 1.0 / draws)
            rows.append((name, theta, lo, hi, p))
        for (name, theta, lo, hi, p), ph in zip(rows, holm([r[4] for r in rows])):
            out[f"{unit}/{name}"] = (theta, lo, hi, p, ph)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seed", type=int, default=20_261_202)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    args = ap.parse_args()
    with open(args.rows, newline="") as f:
        records = list(csv.DictReader(f))
    cols = {k: np.array([r[k] for r in records]) for k in records[0]}
    cols["vts"] = cols["vts"].astype(float)
    w = weights()

    for _ in range(args.warmup):
        bootstrap(*prepare(cols, w), args.draws, args.seed)
    prep, boot, total = [], [], []
    result = None
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        diffs, attrs = prepare(cols, w)
        t1 = time.perf_counter()
        result = bootstrap(diffs, attrs, args.draws, args.seed)
        t2 = time.perf_counter()
        prep.append(t1 - t0)
        boot.append(t2 - t1)
        total.append(t2 - t0)
    median = lambda xs: float(np.median(xs)) * 1e3
    best = lambda xs: float(np.min(xs)) * 1e3
    print(
        json.dumps(
            {
                "numpy": np.__version__,
                "rows": len(records),
                "draws": args.draws,
                "prepare_ms": median(prep),
                "bootstrap_ms": median(boot),
                "total_ms": median(total),
                "prepare_min_ms": best(prep),
                "bootstrap_min_ms": best(boot),
                "total_min_ms": best(total),
                "estimates": {k: v[0] for k, v in result.items()},
                "intervals": {k: [v[1], v[2]] for k, v in result.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
