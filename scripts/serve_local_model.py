#!/usr/bin/env python3
"""Serve a GGUF model on 127.0.0.1 with the xllamacpp wheel's llama.cpp server.

xllamacpp (PyPI, MIT) ships llama.cpp's own HTTP server prebuilt, but no
`llama-server` command: this launcher starts it from Python with what
scripts/local_model_check.sh needs (an OpenAI-compatible /v1 on a loopback port,
tool calling through a Jinja chat template, one slot, a context size) and serves
until it is sent SIGTERM or SIGINT.

Threads default to 1, and OMP_WAIT_POLICY defaults to passive: the wheel's ggml is
built with OpenMP, whose idle threads busy-wait; on a machine whose cores are shared
(2 here, with builds and tests beside the server) 2 threads measured 3.1 tokens/s
where 1 thread gave 47 (docs/local-models.md). Both must be set before the library
is loaded, so this script sets the variable before it imports xllamacpp.

    scripts/serve_local_model.py --model M.gguf --ctx 8192 --port 8080 \\
        --chat-template-file Qwen-Qwen2.5-7B-Instruct.jinja

It prints `listening on http://127.0.0.1:PORT` once the model is loaded; clients
then wait for GET /health to answer 200.
"""

import argparse
import ctypes.util
import os
import signal
import sys
import threading


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="the GGUF file to serve")
    ap.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    ap.add_argument("--ctx", type=int, required=True, help="context size in tokens (llama-server's -c)")
    ap.add_argument("--chat-template-file", help="a Jinja chat template to use instead of the model's own")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for generation and prompt processing (default 1; see above)")
    ap.add_argument("--parallel", type=int, default=1, help="server slots (llama-server's -np; default 1)")
    ap.add_argument("--alias", help="model id listed by /v1/models (default: the file's name)")
    args = ap.parse_args()

    if args.threads < 1 or args.ctx < 1 or args.parallel < 1:
        ap.error("--threads, --ctx and --parallel must be positive")
    if not os.path.isfile(args.model):
        ap.error(f"--model {args.model}: no such file")
    template = None
    if args.chat_template_file:
        with open(args.chat_template_file, encoding="utf-8") as f:
            template = f.read()

    # Before the import: libgomp reads its settings when it is loaded.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if ctypes.util.find_library("gomp") is None:
        print("serve_local_model: the system's OpenMP runtime (libgomp.so.1) is missing; "
              "xllamacpp's llama.cpp needs it: install it with `apt-get install libgomp1` "
              "(Debian/Ubuntu) or your system's libgomp package", file=sys.stderr)
        return 3
    try:
        import xllamacpp as xlc
    except ImportError as e:
        hint = " (install libgomp1: `apt-get install libgomp1`)" if "gomp" in str(e) else ""
        print(f"serve_local_model: cannot import xllamacpp: {e}{hint}", file=sys.stderr)
        return 3

    p = xlc.CommonParams()
    p.model.path = os.path.abspath(args.model)
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = args.parallel
    p.use_jinja = True
    if template is not None:
        p.chat_template = template
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    # The context is what was asked for: do not let llama.cpp shrink it to fit memory.
    p.fit_params = False
    p.model_alias = {args.alias or os.path.basename(args.model)}
    p.ui = False

    print(f"serve_local_model: xllamacpp {xlc.__version__}, model {p.model.path}, -c {args.ctx}, "
          f"-np {args.parallel}, threads {args.threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
          f"chat template {args.chat_template_file or '(the model’s own)'}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xlc.Server(p)
    print(f"serve_local_model: listening on {server.listening_address}", flush=True)
    stop.wait()
    print("serve_local_model: stopping", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # The server's threads stop with the process; the library's destructor is not
    # needed to free anything a client could still see.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
