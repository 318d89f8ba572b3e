"""Auto on the fast engine against transformers' assisted defaults on the eager model (issue #22's
"against transformers on the eager model"), per prompt, from docs/bench-auto/results.json: the two
setups ran the same prompts in one run.sh, one after the other (docs/AUTO.md).

    .venv/bin/python docs/bench-auto/across_engines.py
"""
import json
import statistics
import sys
from pathlib import Path

results = json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/bench-auto/results.json").read_text())
cells = {(c["setup"], c["key"].split("|")[1]): c for c in results["cells"]}
fast, eager = "qwen-coder-1.5b+0.5b-int8", "qwen-coder-1.5b+0.5b-int8-eager"


def rate(cell: dict, lane: str) -> float:
    """The lane's tokens per second, median over the repeats."""
    return statistics.median(r["lanes"][lane]["tokens_per_s"] for r in cell["repeats"])


for (setup, prompt), cell in sorted(cells.items()):
    if setup == eager and (fast, prompt) in cells:
        auto = rate(cells[fast, prompt], "speculative")
        peer = rate(cell, "hf-assisted-defaults")
        print(f"{prompt}: auto (fast engine) {auto:.2f} tok/s, transformers' assisted defaults (eager) "
              f"{peer:.2f} tok/s: {auto / peer:.2f}x")
