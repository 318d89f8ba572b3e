#!/usr/bin/env bash
# The runs behind docs/NEW-DRAFTERS.md: one code prompt of the benchmark suite, greedy, 64 tokens,
# k = 4, fp32 on this CPU; each writes the CLI's JSON. Needs `python -m specdec fetch qwen-pair`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/new-drafters
prompt=$(python -c "import json; print(next(json.loads(l)['prompt'] for l in open('${SUITE:-../shared/prompts/bench.jsonl}') if json.loads(l)['category'] == 'code'))")
run() { name=$1; shift; python -m specdec generate --json --max-new-tokens 64 --k 4 --prompt "$prompt" "$@" > "$out/$name.json"; }
run smollm2-self-first-half --target embedded --drafter self
run smollm2-self-searched --target embedded --drafter self --draft-layers docs/self-spec/smollm2-135m-layers.json
run qwen-1.5b-cross-smollm2 --target qwen-coder-1.5b --draft embedded --drafter cross-tokenizer
run qwen-1.5b-draft-qwen-0.5b --target qwen-coder-1.5b --draft qwen-coder-0.5b --drafter draft-model
run qwen-1.5b-self-first-half --target qwen-coder-1.5b --drafter self
