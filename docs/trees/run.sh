#!/usr/bin/env bash
# The runs behind docs/TREES.md: token trees against chains, greedy, fp32, this machine's CPU, one run
# after the other on a quiet machine, on each CPU engine: fast (the default) into docs/trees/, eager
# into docs/trees/eager/. The Qwen rows need `python -m specdec fetch qwen-pair`.
# `run.sh fast` or `run.sh eager` runs one engine; `run.sh report` only rebuilds docs/TREES.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
trees() { $python -m specdec.bench.trees "$@"; }
runs() {  # $1: engine, $2: folder
    trees --engine "$1" --setup qwen --prompts code-00,code-01,code-edit-05 --out "$2/qwen.json"
    trees --engine "$1" --setup smollm2 --prompts code-00,code-01,code-edit-05,explain-08,creative-14 --repeats 3 \
        --out "$2/smollm2.json"
    trees --engine "$1" --setup qwen --lookup --prompts code-edit-05,summarize-13 --out "$2/qwen-lookup.json"
    trees --engine "$1" --setup qwen --prompts explain-08 --out "$2/qwen-explain.json"
    trees --engine "$1" --setup qwen-int8 --prompts code-01,explain-08 --out "$2/qwen-int8.json"
    # the verify costs again, measured alone on a quiet machine (the report takes them from here)
    trees --engine "$1" --setup qwen --verify-only --out "$2/qwen.json"
}
case "${1:-all}" in
    fast) runs fast docs/trees ;;
    eager) runs eager docs/trees/eager ;;
    all) runs fast docs/trees; runs eager docs/trees/eager ;;
    report) ;;
esac
existing() { for f in "$@"; do [[ -f $f ]] && echo "$f"; done; }
trees --report $(existing docs/trees/{qwen,qwen-explain,qwen-int8,qwen-lookup,smollm2}.json \
    docs/trees/eager/{qwen,qwen-explain,qwen-int8,qwen-lookup,smollm2}.json) > docs/TREES.md
