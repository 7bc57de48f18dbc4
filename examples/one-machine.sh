#!/bin/sh
# A study as N shards on one machine, then the merge (docs/scale-out.md, "Shards").
#
#   examples/one-machine.sh manifests/capacity.toml 4
#
# Run from the repository root. Keys come from the environment, as for any apply:
# export the variable each configuration names in `api_key_env` (OPENAI_API_KEY, ...).
# A route's `concurrency` is shared by all shards, so N processes send no more requests
# to a provider than one would.
set -eu
manifest=${1:?usage: one-machine.sh MANIFEST [SHARDS]}
n=${2:-4}

failed=0
pids=
i=0
while [ "$i" -lt "$n" ]; do
    tbb apply "$manifest" --locked --shard "$i/$n" >"shard-$i.log" 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
# Every shard must end before the merge (which would wait for the outputs lock anyway).
for pid in $pids; do
    wait "$pid" || failed=1
done
if [ "$failed" -ne 0 ]; then
    # Committed episodes are kept: rerunning a failed shard (`tbb apply "$manifest"
    # --locked --shard i/$n`) runs only what it lacks. The merge would run them too.
    echo "a shard failed (see shard-*.log); rerun it, then run this script's merge line" >&2
    exit 1
fi
tbb apply "$manifest" --locked
