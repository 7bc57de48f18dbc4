#!/usr/bin/env bash
# Executes notebooks/capacity.ipynb headless on a study's tables and fails on any cell
# error.
#
#   scripts/run_notebook.sh OUTPUTS_DIR        e.g. scripts/run_notebook.sh outputs/smoke
#
# OUTPUTS_DIR is the study's directory of Parquet tables (outputs/<study>), passed to
# the notebook as TBB_STUDY_DIR. The pinned packages of notebooks/requirements.txt go
# into a virtual environment of their own (TBB_NOTEBOOK_VENV, default
# target/notebook-venv: git-ignored, and reused, so a second run installs nothing).
# The executed notebook, with its outputs, is written to
# OUTPUTS_DIR/capacity.executed.ipynb; the source notebook is left untouched.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTPUTS_DIR   (a study's tables, e.g. outputs/smoke)" >&2
    exit 2
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
study="$(cd "$1" && pwd)" || { echo "error: no directory $1" >&2; exit 2; }
if ! compgen -G "$study/*.parquet" > /dev/null; then
    echo "error: no Parquet tables in $study: run \`tbb apply\` first" >&2
    exit 2
fi
venv="${TBB_NOTEBOOK_VENV:-$repo/target/notebook-venv}"
python="${PYTHON:-python3}"

started=$(date +%s)
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
# Quiet unless something needs installing; pip skips what is already satisfied.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$repo/notebooks/requirements.txt"
installed=$(date +%s)

# nbconvert runs the notebook in its own directory (notebooks/), with the kernel of
# the virtual environment; a cell error makes it exit non-zero. MPLBACKEND keeps
# matplotlib off any display; figures are still embedded inline.
TBB_STUDY_DIR="$study" MPLBACKEND=module://matplotlib_inline.backend_inline \
    "$venv/bin/jupyter" nbconvert --to notebook --execute \
    --ExecutePreprocessor.timeout=600 \
    --ExecutePreprocessor.kernel_name=python3 \
    --output-dir "$study" --output capacity.executed.ipynb \
    "$repo/notebooks/capacity.ipynb"
finished=$(date +%s)
echo "notebook: executed on $study (install $((installed - started)) s, run $((finished - installed)) s)"
