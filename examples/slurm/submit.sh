#!/bin/sh
# A study as a Slurm array of N shards plus the merge that waits for them all
# (docs/scale-out.md, "Shards"). Run from the repository root:
#
#   examples/slurm/submit.sh manifests/capacity.toml 16
#
# If a shard fails, the merge's afterok can never be met: requeue the failed task
# (`scontrol requeue <array job>_<task>`, same numbering, committed episodes reused),
# then submit the merge again (`sbatch examples/slurm/merge.sbatch MANIFEST`). A merge
# submitted with afterany instead would run the failed shard's episodes itself.
set -eu
manifest=${1:?usage: submit.sh MANIFEST [SHARDS]}
n=${2:-16}
array=$(sbatch --parsable --array=0-$((n - 1)) examples/slurm/shards.sbatch "$manifest")
array=${array%%;*}
sbatch --dependency=afterok:"$array" examples/slurm/merge.sbatch "$manifest"
