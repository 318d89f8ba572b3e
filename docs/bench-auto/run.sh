#!/usr/bin/env bash
# docs/AUTO.md: auto (the cost policy over every source) on the bench's own categories (one prompt
# each), 128 new tokens, 2 interleaved repeats (issue #22), against our standard decoding,
# transformers' model.generate and its assisted generation (its real defaults, and k = 4) on the same
# model objects: SmolLM2-135M with no draft model, the Qwen pair with an int8 draft on the fast
# engine, and on the eager engine (what a user's model runs; three prompts: an eager Qwen step is
# slow). One run after the other on a quiet 2-core machine (about an hour). The Qwen rows need
# `python -m specdec fetch qwen-pair`.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
bench() { $python -m specdec bench --auto --max-new-tokens 128 --repeats 2 --out docs/bench-auto --report docs/AUTO.md \
              --plotlyjs cdn --wait 60 --retries 2 "$@"; }
bench --fresh --target embedded --name smollm2-135m
qwen=(--target qwen-coder-1.5b --draft qwen-coder-0.5b --draft-quantize int8)
bench "${qwen[@]}" --name qwen-coder-1.5b+0.5b-int8
bench "${qwen[@]}" --engine eager --prompts code-00,code-edit-05,explain-08 --name qwen-coder-1.5b+0.5b-int8-eager
