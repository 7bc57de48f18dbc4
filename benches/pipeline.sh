#!/usr/bin/env bash
# The engine's speed and memory targets, on this machine:
#   tbb apply manifests/capacity.toml from scratch (18,144 simulated episodes): wall
#   time and peak resident memory (target since issue 10: no slower than 24.9 s and
#   507 MiB);
#   tbb plan manifests/capacity.toml with everything cached (target: under 150 ms).
#
#   benches/pipeline.sh            # builds release, writes into a temporary directory
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
tbb="$PWD/target/release/tbb"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
args=(--outputs "$work/outputs" --lockfiles "$work/lockfiles")

/usr/bin/time -f "%e %M" -o "$work/apply.time" "$tbb" "${args[@]}" apply manifests/capacity.toml > "$work/apply.log"
read -r wall kb < "$work/apply.time"
tail -1 "$work/apply.log"
echo "apply capacity from scratch: ${wall} s wall, peak RSS $((kb / 1024)) MiB"

best=""
for _ in 1 2 3 4 5; do
    /usr/bin/time -f "%e" -o "$work/plan.time" "$tbb" "${args[@]}" plan manifests/capacity.toml > "$work/plan.log"
    t=$(cat "$work/plan.time")
    if [[ -z "$best" ]] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
done
tail -1 "$work/plan.log"
echo "plan capacity, everything cached: best of 5 = ${best} s"
cargo bench --quiet --bench plan -- "$work/outputs" 2>/dev/null | tail -1
