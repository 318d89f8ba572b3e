"""Which source auto drafted round 0 from, and how often it kept that round's first token, in the
Spec-Bench runs' results (each repeat of each turn counted): what CostModel.opening_alpha_1 learns.

    .venv/bin/python docs/bench-auto/opening_sources.py [RUN ...] > docs/bench-auto/opening_sources.txt
"""
import collections
import json
import sys
from pathlib import Path

RUNS = sys.argv[1:] or ["qwen-other-half-avx2", "qwen-tasks-avx2", "qwen-two-per-task-avx2", "rag-short-avx2"]
opened, kept = collections.Counter(), collections.Counter()
for run in RUNS:
    results = json.loads((Path("docs/spec-bench") / run / "spec_bench.json").read_text())
    for answer in results["answers"]:
        if answer["method"] != "auto":
            continue
        for turn in answer["turns"]:
            for repeat in turn["repeats"]:
                if repeat["drafts"]:  # round 0 drafted: its source, and whether it kept a token
                    source = repeat["drafts"][0].split(":")[0]
                    opened[source] += 1
                    kept[source] += repeat["accept_lengths"][0] > 1
print(f"runs: {', '.join(RUNS)}")
for source, rounds in opened.most_common():
    print(f"{source:22s} drafted round 0 {rounds:3d} times, kept its first token {kept[source]:3d} ({kept[source] / rounds:.0%})")
