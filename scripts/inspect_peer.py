"""The peer of `benches/live.rs`: inspect_ai running the bench's workload.

It is handed one request body tbb sent to the bench's loopback server (OpenAI chat
completions), and runs `--samples` samples through inspect_ai against the same server:
each sample holds that body's system and user messages and offers that body's tools,
and inspect_ai's `generate()` loops as tbb does — the server answers with a call to the
first listed tool, then (after a tool result) with a final answer — so each sample costs
two requests, like each of tbb's episodes. The bench measures this process's CPU time
and divides it by the requests its server answered.

Not in CI: it needs `pip install inspect_ai==0.3.285 openai==3.60.0` in a venv (the
versions measured in BENCHMARKS.md). Never reaches
outside the machine: the model's base URL is the loopback server and its key a dummy.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path


def tool_defs(body: dict):
    """The body's tools as inspect_ai tool definitions that answer like tbb's sandbox
    does when a call lacks its arguments (a short JSON error)."""
    from inspect_ai.tool import ToolDef
    from inspect_ai.tool._tool_params import ToolParams

    async def execute(**arguments):
        return json.dumps({"error": "missing required argument", "got": sorted(arguments)})

    defs = []
    for tool in body.get("tools", []):
        function = tool["function"]
        # inspect_ai refuses a parameter without a description; tbb's schemas may omit
        # one, so the parameter's name stands in (a few bytes more on the wire).
        for name, param in function["parameters"].get("properties", {}).items():
            param.setdefault("description", name)
        defs.append(
            ToolDef(
                execute,
                name=function["name"],
                description=function.get("description", ""),
                parameters=ToolParams.model_validate(function["parameters"]),
            )
        )
    return defs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the server's OpenAI base URL (…/v1)")
    parser.add_argument("--request", type=Path, required=True, help="a request body tbb sent")
    parser.add_argument("--samples", type=int, required=True)
    parser.add_argument("--max-connections", type=int, default=8)
    args = parser.parse_args()

    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.solver import generate, use_tools

    body = json.loads(args.request.read_text(encoding="utf-8"))
    messages = body["messages"]
    system = next(m["content"] for m in messages if m["role"] == "system")
    user = next(m["content"] for m in messages if m["role"] == "user")
    dataset = MemoryDataset(
        [
            Sample(id=i, input=[ChatMessageSystem(content=system), ChatMessageUser(content=user)])
            for i in range(args.samples)
        ]
    )
    task = Task(dataset=dataset, solver=[use_tools(tool_defs(body)), generate()])
    os.environ["BENCH_API_KEY"] = "bench-dummy-key"
    with tempfile.TemporaryDirectory() as logs:
        [log] = inspect_eval(
            task,
            model="openai-api/bench/bench-model",
            model_base_url=args.base_url,
            max_connections=args.max_connections,
            max_tokens=body.get("max_completion_tokens", 1024),
            temperature=0,
            log_dir=logs,
            display="none",
            score=False,
        )
        if log.status != "success":
            message = log.error.message if log.error else "no error recorded"
            print(f"inspect_ai eval ended with status {log.status}: {message}", file=sys.stderr)
            return 1
        print(f"inspect_ai: {log.results.total_samples if log.results else 0} samples")
    return 0

if __name__ == "__main__":
    sys.exit(main())
