#!/usr/bin/env bash
# docs/AUTO.md: auto (the cost policy over every source) against standard decoding and transformers'
# assisted generation, on the fast CPU engine (#18), with the Qwen pair on the eager engine beside it
# so the engine's effect can be read off. One run after the other on a quiet 2-core machine (about
# 45 minutes). The Qwen rows need `python -m specdec fetch qwen-pair`.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
bench() { $python -m specdec bench --auto --out docs/bench-auto --report docs/AUTO.md --plotlyjs cdn --wait 60 --retries 2 "$@"; }
bench --fresh --target embedded --draft embedded --draft-quantize int8 --name smollm2-135m
qwen=(--target qwen-coder-1.5b --draft qwen-coder-0.5b --draft-quantize int8 --prompts code-00,code-edit-05,explain-08)
bench "${qwen[@]}" --name qwen-coder-1.5b+0.5b-int8
bench "${qwen[@]}" --engine eager --name qwen-coder-1.5b+0.5b-int8-eager
