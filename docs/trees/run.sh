#!/usr/bin/env bash
# The runs behind docs/TREES.md: token trees against chains, greedy, fp32, this machine's CPU, one run
# after the other on a quiet machine. The Qwen rows need `python -m specdec fetch qwen-pair`.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
trees() { $python -m specdec.bench.trees "$@"; }
trees --setup qwen --prompts code-00,code-01,code-edit-05 --out docs/trees/qwen.json
trees --setup smollm2 --prompts code-00,code-01,code-edit-05,explain-08,creative-14 --repeats 3 \
    --out docs/trees/smollm2.json
trees --setup qwen --lookup --prompts code-edit-05,summarize-13 --out docs/trees/qwen-lookup.json
trees --setup qwen --prompts explain-08 --out docs/trees/qwen-explain.json
trees --setup qwen-int8 --prompts code-01,explain-08 --out docs/trees/qwen-int8.json
# the verify costs again, measured alone on a quiet machine (the report takes them from here)
trees --setup qwen --verify-only --out docs/trees/qwen.json
trees --report docs/trees/qwen.json docs/trees/qwen-explain.json docs/trees/qwen-int8.json \
    docs/trees/qwen-lookup.json docs/trees/smollm2.json > docs/TREES.md
