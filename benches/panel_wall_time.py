#!/usr/bin/env python3
"""The wall time the simulated panel's modelled latencies predict for the paper's
panel, on 1 machine and on 16 (issue 28 §4, last benchmark).

    python3 benches/panel_wall_time.py --outputs OUT [--machines 16] [--json]
    python3 benches/panel_wall_time.py --self-test

Reads OUT/<study>/episodes.parquet of every applied study (capacity, sweep, crossover,
discovery, repairs, frontier, holdout, sentinel, pilot) and the catalogue
(manifests/configurations.toml). Each episode's `wall_ms` is its modelled wall time: the
sum of its requests' `Configuration::modelled_latency_ms` (first token + prompt tokens
at the prefill rate + completion tokens at the output rate; tool calls cost nothing).

The model is tbb's scheduler (crates/engine/src/pipeline/scheduler.rs), replayed with
the modelled durations instead of a provider:
  - each route is a pool of `concurrency` slots (the first configuration naming the
    route sets it; default 4, clamped to 1..256, as `scheduler::routes` does);
  - an episode holds one slot from its first request to its last (the scheduler takes
    a slot in `start_next` and gives it back in `finished`/`ended`);
  - within a route, episodes start in the manifest's (the DAG's) order, which is the
    episodes table's row order (`--check-order TBB` compares it with `tbb dag --dot`);
    an ordered schedule's arm (`schedule_position` > 1) waits aside until the arm
    before it has ended, then starts before the queue;
  - routes do not wait for one another, so a study's wall time is the largest route
    makespan, and the panel's is the sum over studies (one `tbb apply` after another).
The same list scheduling in longest-first order (LPT; an ordered condition's arms as one
job of their summed time) is printed beside it as what a better order could gain.

16 machines (`--machines N`): each study as N shards of `tbb apply --shard i/N`, as
crates/engine/src/pipeline/shard.rs deals them: a condition (the execute node's
identity without arm and cap) is placed by the blake3 of `"tbb shard/1\\0" + identity`;
a limited route goes to min(concurrency, N) shards starting at the shard its name's
hash picks, its conditions dealt round-robin in hash order, its slots divided floor
or ceiling among them. "global" is that; "per-process" gives every shard the route's
whole concurrency and deals to all N (what tbb does only for simulated routes, which
have no provider behind them, and refuses for live ones because providers limit per
key). Local CPU (about 1 ms per episode) is left out: the prediction is provider time.

Route mappings (`--routes`): `table` is tbb's own (the episodes' `route` column: the
whole simulated panel is one route, `sim`); `organization` puts each organization's
configurations on one route (a live panel with one endpoint per provider), and
`configuration` each configuration on its own; every hypothetical route gets its first
configuration's concurrency.
"""

import argparse
import heapq
import json
import pathlib
import subprocess
import sys
import tomllib
from collections import deque

STUDIES = ["capacity", "sweep", "crossover", "discovery", "repairs", "frontier",
           "holdout", "sentinel", "pilot"]
PAPER_CONDITIONS = 26_576
DEFAULT_CONCURRENCY = 4  # crates/provider/src/config.rs, default_concurrency()

# ---------------------------------------------------------------------------- blake3
# Only what the partition needs: the hash of one chunk (at most 1,024 bytes).

IV = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
      0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19]
PERMUTATION = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8]
CHUNK_START, CHUNK_END, ROOT = 1, 2, 8
M32 = 0xFFFFFFFF


def _g(s, a, b, c, d, x, y):
    s[a] = (s[a] + s[b] + x) & M32
    v = s[d] ^ s[a]
    s[d] = ((v >> 16) | (v << 16)) & M32
    s[c] = (s[c] + s[d]) & M32
    v = s[b] ^ s[c]
    s[b] = ((v >> 12) | (v << 20)) & M32
    s[a] = (s[a] + s[b] + y) & M32
    v = s[d] ^ s[a]
    s[d] = ((v >> 8) | (v << 24)) & M32
    s[c] = (s[c] + s[d]) & M32
    v = s[b] ^ s[c]
    s[b] = ((v >> 7) | (v << 25)) & M32


def _compress(cv, m, block_len, flags):
    s = cv[:] + IV[:4] + [0, 0, block_len, flags]  # chunk counter 0
    for r in range(7):
        _g(s, 0, 4, 8, 12, m[0], m[1])
        _g(s, 1, 5, 9, 13, m[2], m[3])
        _g(s, 2, 6, 10, 14, m[4], m[5])
        _g(s, 3, 7, 11, 15, m[6], m[7])
        _g(s, 0, 5, 10, 15, m[8], m[9])
        _g(s, 1, 6, 11, 12, m[10], m[11])
        _g(s, 2, 7, 8, 13, m[12], m[13])
        _g(s, 3, 4, 9, 14, m[14], m[15])
        if r < 6:
            m = [m[i] for i in PERMUTATION]
    return [s[i] ^ s[i + 8] for i in range(8)]


def blake3_one_chunk(data: bytes) -> bytes:
    """BLAKE3 of `data` (at most one chunk), 32 bytes."""
    if len(data) > 1024:
        raise ValueError("more than one chunk")
    blocks = [data[i:i + 64] for i in range(0, len(data), 64)] or [b""]
    cv = IV[:]
    for k, block in enumerate(blocks):
        flags = (CHUNK_START if k == 0 else 0)
        if k == len(blocks) - 1:
            flags |= CHUNK_END | ROOT
        words = list(int.from_bytes(block.ljust(64, b"\0")[i:i + 4], "little")
                     for i in range(0, 64, 4))
        cv = _compress(cv, words, len(block), flags)
    return b"".join(w.to_bytes(4, "little") for w in cv)


def shard_hash(text: str) -> int:
    """shard.rs `hash`: the first 8 bytes (little-endian) of the domain-prefixed blake3."""
    return int.from_bytes(blake3_one_chunk(f"tbb shard/1\0{text}".encode())[:8], "little")

# ---------------------------------------------------------------------- the schedule


def simulate(durations, after, slots):
    """Makespan (ms) of tbb's scheduler on one route: `durations[i]` in manifest order,
    `after[i]` the index of the episode that must end before i starts (or None),
    `slots` slots. Mirrors scheduler.rs: released arms first, else the queue's head; a
    head whose predecessor has not ended waits aside."""
    n = len(durations)
    if n == 0:
        return 0
    queue = deque(range(n))
    released = deque()
    waiting = {}
    ended = [False] * n
    free = max(1, slots)
    running = []  # heap of (end, start order, index)
    order = 0
    now = 0
    makespan = 0
    while True:
        while free > 0:
            if released:
                i = released.popleft()
            elif queue:
                i = queue.popleft()
                a = after[i]
                if a is not None and not ended[a]:
                    waiting.setdefault(a, []).append(i)
                    continue
            else:
                break
            free -= 1
            end = now + durations[i]
            heapq.heappush(running, (end, order, i))
            order += 1
        if not running:
            break
        now, _, i = heapq.heappop(running)
        makespan = max(makespan, now)
        ended[i] = True
        free += 1
        released.extend(waiting.pop(i, ()))
    if queue or released or waiting:
        raise RuntimeError("episodes left waiting: a predecessor never ran")
    return makespan


def lpt(jobs, slots):
    """Longest-processing-time-first list scheduling of `jobs` (ms) on `slots` slots."""
    loads = [0] * max(1, slots)
    for d in sorted(jobs, reverse=True):
        heapq.heapreplace(loads, loads[0] + d)
    return max(loads)


def route_shards(name, slots, count, limited):
    """shard.rs `Route::shards`: the shards a route is dealt to, in dealing order."""
    taken = min(max(1, slots), count) if limited else count
    start = shard_hash(f"route\0{name}") % count
    return [(start + k) % count for k in range(taken)]


def route_share(name, slots, count, limited, index):
    """shard.rs `Route::share`: shard `index`'s slots of the route."""
    if not limited:
        return slots
    shards = route_shards(name, slots, count, limited)
    if index not in shards:
        return 0
    place = shards.index(index)
    return slots // len(shards) + (1 if place < slots % len(shards) else 0)

# ------------------------------------------------------------------------ the study


def load_catalogue(path):
    with open(path, "rb") as f:
        configs = tomllib.load(f)["configuration"]
    return {c["name"]: c for c in configs}, [c["name"] for c in configs]


def episode_rows(study_dir):
    import pyarrow.parquet as pq  # only needed off the self-test
    cols = ["configuration", "organization", "route", "block", "arm", "completion_cap",
            "repeat", "schedule_position", "family", "v", "w", "d", "r", "depth",
            "wall_ms"]
    t = pq.read_table(study_dir / "episodes.parquet", columns=cols)
    return t.to_pylist()


def labels(rows):
    """Each row's execute-node fields as the DAG prints them, and its condition
    (the fields without arm and cap: shard.rs `condition`)."""
    several_blocks = len({r["block"] for r in rows}) > 1
    out = []
    for r in rows:
        head = [("cfg", r["configuration"]), ("family", r["family"]), ("v", r["v"]),
                ("w", r["w"]), ("d", r["d"]), ("r", r["r"])]
        if r["depth"] is not None:
            head.append(("depth", r["depth"]))
        if several_blocks:
            head.append(("block", r["block"]))
        fields = head + [("arm", r["arm"]), ("cap", r["completion_cap"]),
                         ("rep", r["repeat"])]
        cond = [f for f in fields if f[0] not in ("arm", "cap")]
        join = lambda fs: ", ".join(f"{k}={v}" for k, v in fs)  # noqa: E731
        out.append((f"execute[{join(fields)}]", join(cond)))
    return out


class Study:
    """A study's episodes, in manifest order, with their routes and predecessors."""

    def __init__(self, name, rows, catalogue, catalogue_order):
        self.name = name
        self.rows = rows
        self.durations = [int(r["wall_ms"]) for r in rows]
        self.labels = labels(rows)
        self.conditions = [c for _, c in self.labels]
        by_place = {}
        self.after = []
        for i, (r, cond) in enumerate(zip(rows, self.conditions)):
            p = r["schedule_position"]
            self.after.append(by_place.get((cond, p - 1)) if p and p > 1 else None)
            if p:
                by_place[(cond, p)] = i
        self.catalogue = catalogue
        # The study's configurations in catalogue order: the first naming a route sets
        # its concurrency.
        present = {r["configuration"] for r in rows}
        self.config_order = [c for c in catalogue_order if c in present]
        self._hash = {}

    def route_of(self, mapping):
        """Each episode's route name under `mapping`, and each route's slots."""
        key = {"table": lambda r: r["route"],
               "organization": lambda r: f"organization:{r['organization']}",
               "configuration": lambda r: f"configuration:{r['configuration']}"}[mapping]
        routes = [key(r) for r in self.rows]
        first = {}
        by_config = {r["configuration"]: k for r, k in zip(self.rows, routes)}
        for c in self.config_order:
            first.setdefault(by_config[c], c)
        slots = {k: min(256, max(1, int(self.catalogue[c].get("concurrency",
                                                              DEFAULT_CONCURRENCY))))
                 for k, c in first.items()}
        return routes, slots

    def condition_hash(self, cond):
        h = self._hash.get(cond)
        if h is None:
            h = self._hash[cond] = shard_hash(cond)
        return h

    def predict(self, mapping, machines):
        routes, slots = self.route_of(mapping)
        out = {"routes": {k: v for k, v in sorted(slots.items())}}
        members = {}
        for i, k in enumerate(routes):
            members.setdefault(k, []).append(i)
        one, best = {}, {}
        for k, idx in members.items():
            one[k] = self._run(idx, slots[k])
            best[k] = lpt(self._jobs(idx), slots[k])
        out["one"] = max(one.values())
        out["one_by_route"] = one
        out["lpt"] = max(best.values())
        out["work"] = sum(self.durations)
        out["episodes"] = len(self.durations)
        for kind, limited in (("global", True), ("per_process", False)):
            worst, where = 0, None
            for k, idx in members.items():
                for shard, part in self._deal(k, idx, slots[k], machines, limited).items():
                    share = route_share(k, slots[k], machines, limited, shard)
                    t = self._run(part, share)
                    if t > worst:
                        worst, where = t, (k, shard, share, len(part))
            out[kind] = worst
            out[kind + "_slowest"] = where
        return out

    def _jobs(self, idx):
        """Episodes as independent jobs, an ordered condition's arms summed into one."""
        jobs, chain = [], {}
        for i in idx:
            if self.rows[i]["schedule_position"]:
                chain[self.conditions[i]] = chain.get(self.conditions[i], 0) + self.durations[i]
            else:
                jobs.append(self.durations[i])
        return jobs + list(chain.values())

    def _run(self, idx, slots):
        place = {i: j for j, i in enumerate(idx)}
        durations = [self.durations[i] for i in idx]
        after = [place.get(self.after[i]) if self.after[i] is not None else None for i in idx]
        return simulate(durations, after, slots)

    def _deal(self, route, idx, slots, machines, limited):
        """shard.rs `deal` for one route: its conditions round-robin in hash order."""
        conds = {}
        for i in idx:
            conds.setdefault(self.conditions[i], []).append(i)
        ranked = sorted(conds, key=lambda c: (self.condition_hash(c), c))
        shards = route_shards(route, slots, machines, limited)
        parts = {}
        for rank, c in enumerate(ranked):
            parts.setdefault(shards[rank % len(shards)], []).extend(conds[c])
        return {s: sorted(p) for s, p in parts.items()}


def check_order(tbb, study, manifest_dir, outputs):
    """The episodes table's row order is the DAG's execute-node order."""
    dot = subprocess.run([tbb, "--outputs", str(outputs), "dag", "--dot",
                          str(manifest_dir / f"{study.name}.toml")],
                         check=True, capture_output=True, text=True).stdout
    dag = [line.split('label="', 1)[1].split('"', 1)[0]
           for line in dot.splitlines() if 'label="execute[' in line]
    mine = [label for label, _ in study.labels]
    if dag != mine:
        first = next((i for i, (a, b) in enumerate(zip(dag, mine)) if a != b), None)
        raise SystemExit(f"{study.name}: episodes table order differs from the DAG's "
                         f"({len(dag)} vs {len(mine)} nodes, first difference at {first})")
    return len(dag)

# ---------------------------------------------------------------------------- output


def hours(ms):
    return f"{ms / 3.6e6:,.2f} h"


def report(results, machines, mapping):
    head = (f"| study | episodes | modelled time, serial | 1 machine | 1 machine, LPT order | "
            f"{machines} machines, global limit | {machines} machines, per-process limits |")
    print(head)
    print("|" + "---|" * 7)
    tot = {k: 0 for k in ("episodes", "work", "one", "lpt", "global", "per_process")}
    for name, r in results.items():
        print(f"| {name} | {r['episodes']:,} | {hours(r['work'])} | {hours(r['one'])} | "
              f"{hours(r['lpt'])} | {hours(r['global'])} | {hours(r['per_process'])} |")
        for k in tot:
            tot[k] += r[k]
    print(f"| **all, one after another** | {tot['episodes']:,} | {hours(tot['work'])} | "
          f"**{hours(tot['one'])}** | {hours(tot['lpt'])} | **{hours(tot['global'])}** | "
          f"{hours(tot['per_process'])} |")
    scale = PAPER_CONDITIONS / tot["episodes"]
    print(f"| paper's panel, scaled ×{scale:.4f} to {PAPER_CONDITIONS:,} | {PAPER_CONDITIONS:,} | "
          f"{hours(tot['work'] * scale)} | {hours(tot['one'] * scale)} | "
          f"{hours(tot['lpt'] * scale)} | {hours(tot['global'] * scale)} | "
          f"{hours(tot['per_process'] * scale)} |")
    d = tot["global"] - tot["one"]
    print(f"\nroutes ({mapping}): " + "; ".join(
        f"{k} {v} slots" for k, v in next(iter(results.values()))["routes"].items()))
    print(f"{machines} machines with global limits vs 1 machine: {d / 1000:+,.1f} s "
          f"({100 * d / tot['one']:+.3f} %); per-process limits: "
          f"×{tot['one'] / tot['per_process']:.2f} faster than 1 machine")
    return tot

# ------------------------------------------------------------------------- self-test


def self_test():
    """Hand-computed cases; prints 'N passed, N failed' and returns the failures."""
    checks = [
        # BLAKE3's published vector for the empty input.
        ("blake3 of the empty input", blake3_one_chunk(b"").hex()
         == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        # 3 episodes of 3, 3 and 4 ms on 2 slots, in manifest order: the first two run
        # 0-3, the third 3-7 -> 7.
        ("3 episodes on 2 slots, manifest order", simulate([3, 3, 4], [None] * 3, 2) == 7),
        # Longest first: 4 (0-4) beside 3 (0-3), then 3 (3-6) -> 6.
        ("3 episodes on 2 slots, LPT", lpt([3, 3, 4], 2) == 6),
        ("one slot is the sum", simulate([3, 3, 4], [None] * 3, 1) == 10),
        # An ordered arm: B (2 ms) follows A (2 ms); C (5 ms) after them in the manifest.
        # 2 slots: A starts at 0, B waits aside, C takes the second slot at 0; A ends at
        # 2, B runs 2-4; C ends at 5 -> 5.
        ("an ordered arm waits aside", simulate([2, 2, 5], [None, 0, None], 2) == 5),
        # A released arm goes before the queue: A(2), B(3) after A, C(4), D(4); 2 slots:
        # A and C at 0 (B waits aside); A ends at 2 -> B (2-5), not D; C ends at 4 -> D
        # (4-8) -> 8. (Taking D first would give D 2-6, B 4-7 -> 7.)
        ("a released arm goes first", simulate([2, 3, 4, 4], [None, 0, None, None], 2) == 8),
        # shard.rs's division: 6 slots over 4 shards are 2, 2, 1, 1 in dealing order.
        ("6 slots over 4 shards", [route_share("x", 6, 4, True, s)
                                   for s in route_shards("x", 6, 4, True)] == [2, 2, 1, 1]),
        # A route of 4 slots on 16 shards goes to 4 of them, one slot each.
        ("4 slots over 16 shards", sorted(route_share("sim", 4, 16, True, s)
                                          for s in range(16)) == [0] * 12 + [1] * 4),
        # Unlimited (per-process): dealt to every shard, each with all the slots.
        ("per-process: every shard, every slot",
         len(route_shards("sim", 4, 16, False)) == 16
         and all(route_share("sim", 4, 16, False, s) == 4 for s in range(16))),
    ]
    failed = [name for name, ok in checks if not ok]
    for name in failed:
        print(f"FAILED: {name}")
    print(f"self-test: {len(checks) - len(failed)} passed, {len(failed)} failed")
    return failed


# ------------------------------------------------------------------------------ main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outputs", default="outputs", type=pathlib.Path)
    ap.add_argument("--catalogue", default="manifests/configurations.toml", type=pathlib.Path)
    ap.add_argument("--studies", nargs="*", default=None)
    ap.add_argument("--machines", type=int, default=16)
    ap.add_argument("--routes", choices=["table", "organization", "configuration", "all"],
                    default="table")
    ap.add_argument("--check-order", metavar="TBB",
                    help="compare each episodes table's order with `TBB dag --dot` "
                         "(run from the repository root)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(1 if self_test() else 0)
    catalogue, order = load_catalogue(args.catalogue)
    names = args.studies or [s for s in STUDIES
                             if (args.outputs / s / "episodes.parquet").exists()]
    studies = [Study(s, episode_rows(args.outputs / s), catalogue, order) for s in names]
    if args.check_order:
        for st in studies:
            n = check_order(args.check_order, st, args.catalogue.parent, args.outputs)
            print(f"order: {st.name}: {n:,} execute nodes in the DAG's order", file=sys.stderr)
    mappings = ["table", "organization", "configuration"] if args.routes == "all" else [args.routes]
    everything = {}
    for mapping in mappings:
        results = {st.name: st.predict(mapping, args.machines) for st in studies}
        everything[mapping] = results
        if not args.json:
            print(f"\n### routes: {mapping}\n")
            report(results, args.machines, mapping)
    if args.json:
        json.dump(everything, sys.stdout, indent=1, default=str)
        print()


if __name__ == "__main__":
    main()
