#!/usr/bin/env bash
# docs/FASTPATH.md: every number in it comes from these commands (2-core CPU, about 45 minutes).
set -euo pipefail
python=${PYTHON:-.venv/bin/python}
$python -m specdec.bench.fastpath --out docs/fastpath/results.json
# The 0.5B rows and the speculative pairs of the first run shared the CPU with a test run (other load
# up to 0.99 cores, in the JSON): measured again alone, and merged in place of those rows.
$python -m specdec.bench.fastpath --models qwen-coder-0.5b --out docs/fastpath/rerun.json
$python -m specdec.bench.fastpath --merge docs/fastpath/results.json docs/fastpath/rerun.json --out docs/fastpath/merged.json
$python -m specdec.bench.fastpath --report docs/fastpath/merged.json --notes docs/fastpath/notes.md > docs/FASTPATH.md
# The 2-core AMD EPYC (2026-11-25), SmolLM2 only, after every linear layer was packed (fast.py):
# docs/FASTPATH-EPYC.md (about 1 minute).
$python -m specdec.bench.fastpath --models embedded --no-pairs --out docs/fastpath/epyc-embedded.json
$python -m specdec.bench.fastpath --report docs/fastpath/epyc-embedded.json --notes docs/fastpath/epyc-notes.md > docs/FASTPATH-EPYC.md
# The same command on 2026-11-27, when this host ran at about half that speed (SmolLM2's fast step 59 ms
# against 24 ms): ours against generate() 1.05x fast, 1.04x eager, the same tokens; kept apart from the
# table above (docs/spec-bench/notes.md, session of 2026-11-27 from 10:01).
#   $python -m specdec.bench.fastpath --models embedded --no-pairs --out docs/fastpath/epyc-embedded-slow-host.json
# The 2-core Intel Xeon with AVX-512 and AMX (2026-12-01), SmolLM2 only, standard decoding against
# generate() on both engines (about 2 minutes): docs/fastpath/xeon-amx-embedded.md.
#   $python -m specdec.bench.fastpath --models embedded --no-pairs --repeats 7 --out docs/fastpath/xeon-amx-embedded.json
#   $python -m specdec.bench.fastpath --report docs/fastpath/xeon-amx-embedded.json > docs/fastpath/xeon-amx-embedded.md
