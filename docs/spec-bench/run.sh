#!/usr/bin/env bash
# docs/SPEC-BENCH.md, and the Spec-Bench sections of docs/BENCHMARKS.md: the Spec-Bench-style
# leaderboard on specdec's own sample, 2-core CPU, fast engine, one question per category, 128 new
# tokens a turn, each turn the median of 2 interleaved repeats (issues #22 and #23).
#   run.sh smollm2          SmolLM2-135M alone, every no-draft method, greedy (~25 minutes)
#   run.sh qwen             Qwen2.5-Coder-1.5B + its 0.5B int8 draft (auto's CPU setup): the draft model,
#                           auto and transformers' assisted defaults, greedy (~30 minutes; needs
#                           `python -m specdec fetch qwen-pair`)
#   run.sh qwen-recycling   Qwen2.5-Coder-1.5B with no draft model: token recycling three ways, greedy
#   run.sh smollm2-sampled  as smollm2, sampled at temperature 0.7, top-p 0.9: auto and token recycling
#   run.sh qwen-sampled     as qwen, sampled at temperature 0.7, top-p 0.9: auto and transformers
#   run.sh qwen-engines     the Qwen pair on one question per task (7 turns): our standard decoding, the
#                           draft model, auto and transformers on the fast engine (2 repeats), then
#                           standard decoding and transformers' assisted defaults on the eager engine, what
#                           a user's model runs (1 repeat: an eager Qwen step is slow), in one table
#   run.sh qwen-tasks       as qwen on one question per task (7 turns, 2 repeats, ~15 minutes): the draft
#                           model, auto and transformers on the fast engine
#   run.sh qwen-tasks-avx2  as qwen-tasks, its results kept apart for a host without AVX-512 (a Zen 3 EPYC:
#                           its caption names the CPU; the other runs' hosts had AVX-512); likewise
#                           qwen-other-half-avx2, qwen-fp32-tasks-avx2, qwen-sampled-tasks-avx2,
#                           qwen-two-per-task-avx2, qwen-long-avx2, rag-short-avx2 and smollm2-other-half-avx2
#   run.sh qwen-two-per-task  as qwen-tasks over both questions of each task's category in that draw
#                           (coding for the conversation task; 12 questions, 14 turns, ~40 minutes)
#   run.sh qwen-fp32-tasks  as qwen-tasks with the fp32 draft (no --draft-quantize)
#   run.sh qwen-sampled-tasks  as qwen-sampled on one question per task (7 turns, 2 repeats): auto and
#                           transformers on the fast engine
#   run.sh qwen-long        the Qwen pair on specdec/bench/prompts/spec_bench_long.jsonl: a summary and a RAG
#                           answer over ~750-token prompts, the length of Spec-Bench's own (CNN/DailyMail
#                           articles, retrieved passages), where the sample's are 60-120 tokens: the draft
#                           model, auto and transformers (2 repeats, ~15 minutes)
#   run.sh translation      the Qwen pair on docs/spec-bench/translation/questions.jsonl (ten translation
#                           answers): auto and transformers, greedy from no saved costs, greedy again from
#                           the costs that run saved, and sampled (~25 minutes; the folder's README)
#   run.sh rag-short        the Qwen pair on docs/spec-bench/rag-short/questions.jsonl (seven short RAG answers):
#                           auto and transformers (the folder's README; ~10 minutes)
#   run.sh smollm2-other-half  SmolLM2-135M alone on the 13 sample questions the seed-0 draw leaves out
#                           (no table above holds them but qwen-two-per-task's six; nine are among
#                           the A/B scripts' session, docs/bench-auto/ab_session.py): prompt lookup and
#                           auto, greedy (~10 minutes)
#   run.sh qwen-other-half    as qwen on those 13 questions (~40 minutes)
#   run.sh smollm2-sampled-other-half  as smollm2-other-half, sampled at temperature 0.7, top-p 0.9: auto
#                           alone (~10 minutes)
#   run.sh report           only rebuild docs/SPEC-BENCH.md from the results
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
sample=(--suite specdec/bench/prompts/spec_bench_sample.jsonl --per-category 1 --sample-seed 0 --max-new-tokens 128
        --repeats 2 --report docs/BENCHMARKS.md)
qwen=(--target qwen-coder-1.5b --draft qwen-coder-0.5b --draft-quantize int8)
sampled=(--temperatures 0.7)
# One question per task, for setups too slow for the whole sample; these runs stay out of BENCHMARKS.md.
subset=(--suite specdec/bench/prompts/spec_bench_sample.jsonl --per-category 1 --sample-seed 0 --max-new-tokens 128
        --prompts specdec-009,specdec-017,specdec-018,specdec-020,specdec-023,specdec-024)
# Both questions of each of those categories: a task's figure over two questions, six of them not
# in the seed-0 draw (three of those six are in the A/B scripts' session, docs/bench-auto/ab_session.py).
two_per_task=(--suite specdec/bench/prompts/spec_bench_sample.jsonl --per-category 2 --sample-seed 0 --max-new-tokens 128
        --prompts specdec-008,specdec-009,specdec-016,specdec-017,specdec-018,specdec-019,specdec-020,specdec-021,specdec-022,specdec-023,specdec-024,specdec-025)
# The other question of every category: the half of the sample the seed-0 draw leaves out.
other_half=(--suite specdec/bench/prompts/spec_bench_sample.jsonl --per-category 2 --sample-seed 0 --max-new-tokens 128
        --prompts specdec-000,specdec-002,specdec-005,specdec-006,specdec-008,specdec-010,specdec-012,specdec-014,specdec-016,specdec-019,specdec-021,specdec-022,specdec-025)
case "${1:-report}" in
    smollm2) $python -m specdec bench "${sample[@]}" --out docs/spec-bench/smollm2 ;;
    smollm2-other-half|smollm2-other-half-avx2) $python -m specdec bench "${other_half[@]}" --repeats 2 \
              --drafters prompt-lookup,auto --out "docs/spec-bench/$1" ;;
    qwen-other-half|qwen-other-half-avx2) $python -m specdec bench "${other_half[@]}" --repeats 2 "${qwen[@]}" \
              --drafters draft-model,auto,transformers --out "docs/spec-bench/$1" ;;
    smollm2-sampled-other-half) $python -m specdec bench "${other_half[@]}" --repeats 2 "${sampled[@]}" \
              --drafters auto --out docs/spec-bench/smollm2-sampled-other-half ;;
    qwen) $python -m specdec bench "${sample[@]}" "${qwen[@]}" --drafters draft-model,auto,transformers \
              --out docs/spec-bench/qwen ;;
    qwen-recycling) $python -m specdec bench "${sample[@]}" --target qwen-coder-1.5b --drafters recycling \
              --out docs/spec-bench/qwen-recycling ;;
    smollm2-sampled) $python -m specdec bench "${sample[@]}" "${sampled[@]}" --drafters auto,recycling \
              --out docs/spec-bench/smollm2-sampled ;;
    qwen-sampled) $python -m specdec bench "${sample[@]}" "${sampled[@]}" "${qwen[@]}" --drafters auto,transformers \
              --out docs/spec-bench/qwen-sampled ;;
    qwen-tasks|qwen-tasks-avx2) $python -m specdec bench "${subset[@]}" "${qwen[@]}" --repeats 2 \
              --drafters draft-model,auto,transformers --out "docs/spec-bench/$1" ;;
    qwen-two-per-task|qwen-two-per-task-avx2) $python -m specdec bench "${two_per_task[@]}" "${qwen[@]}" --repeats 2 \
              --drafters draft-model,auto,transformers --out "docs/spec-bench/$1" ;;
    qwen-fp32-tasks|qwen-fp32-tasks-avx2) $python -m specdec bench "${subset[@]}" --target qwen-coder-1.5b \
              --draft qwen-coder-0.5b --repeats 2 --drafters draft-model,auto,transformers --out "docs/spec-bench/$1" ;;
    qwen-sampled-tasks|qwen-sampled-tasks-avx2) $python -m specdec bench "${subset[@]}" "${sampled[@]}" "${qwen[@]}" --repeats 2 \
              --drafters auto,transformers --out "docs/spec-bench/$1" ;;
    qwen-long|qwen-long-avx2) $python -m specdec bench --suite specdec/bench/prompts/spec_bench_long.jsonl --max-new-tokens 128 \
              --repeats 2 "${qwen[@]}" --drafters draft-model,auto,transformers --out "docs/spec-bench/$1" ;;
    rag-short|rag-short-avx2) $python -m specdec bench --suite docs/spec-bench/rag-short/questions.jsonl --max-new-tokens 128 \
              --repeats 2 "${qwen[@]}" --drafters auto,transformers --out "docs/spec-bench/$1" ;;
    qwen-engines)
        $python -m specdec bench "${subset[@]}" "${qwen[@]}" --repeats 2 --drafters draft-model,auto,transformers \
              --out docs/spec-bench/qwen-fast
        $python -m specdec bench "${subset[@]}" "${qwen[@]}" --repeats 1 --engine eager --drafters transformers \
              --out docs/spec-bench/qwen-eager
        $python docs/spec-bench/engines.py docs/spec-bench/qwen-fast docs/spec-bench/qwen-eager \
              docs/spec-bench/qwen-engines ;;
    translation)
        tr=(--suite docs/spec-bench/translation/questions.jsonl --max-new-tokens 128 --repeats 2 "${qwen[@]}"
            --drafters auto,transformers)
        SPECDEC_COSTS=$(mktemp -d); export SPECDEC_COSTS
        $python -m specdec bench "${tr[@]}" --out docs/spec-bench/translation
        $python -m specdec bench "${tr[@]}" --out docs/spec-bench/translation/saved-costs
        SPECDEC_COSTS=$(mktemp -d)
        $python -m specdec bench "${tr[@]}" "${sampled[@]}" --out docs/spec-bench/translation/sampled
        for run in "docs/spec-bench/translation docs/spec-bench/translation/saved-costs" \
                   docs/spec-bench/translation/sampled "docs/spec-bench/translation/sampled --methods auto,standard"; do
            $python docs/spec-bench/per_question.py $run
        done ;;
    report) ;;
esac
declare -A titles=([qwen]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy"
        [qwen-recycling]="Qwen2.5-Coder-1.5B, no draft model, greedy"
        [qwen-engines]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, one question per task: fast and eager engines"
        [smollm2]="SmolLM2-135M, no draft model, greedy"
        [qwen-other-half]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, the other 13 questions of the sample"
        [qwen-other-half-avx2]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, the other 13 questions of the sample, on a host without AVX-512"
        [smollm2-other-half]="SmolLM2-135M, no draft model, greedy, the other 13 questions of the sample"
        [smollm2-other-half-avx2]="SmolLM2-135M, no draft model, greedy, the other 13 questions of the sample, on a host without AVX-512"
        [smollm2-sampled-other-half]="SmolLM2-135M, no draft model, sampled (T = 0.7, top-p 0.9), the other 13 questions of the sample"
        [qwen-sampled]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, sampled (T = 0.7, top-p 0.9)"
        [qwen-tasks]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, one question per task"
        [qwen-tasks-avx2]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, one question per task, on a host without AVX-512"
        [qwen-two-per-task]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, two questions per task"
        [qwen-two-per-task-avx2]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, two questions per task, on a host without AVX-512"
        [qwen-long]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, long prompts (a summary and a RAG answer over ~750 tokens)"
        [qwen-long-avx2]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, greedy, long prompts (a summary and a RAG answer over ~750 tokens), on a host without AVX-512"
        [qwen-fp32-tasks]="Qwen2.5-Coder-1.5B + 0.5B fp32 draft, greedy, one question per task"
        [qwen-fp32-tasks-avx2]="Qwen2.5-Coder-1.5B + 0.5B fp32 draft, greedy, one question per task, on a host without AVX-512"
        [qwen-sampled-tasks]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, sampled (T = 0.7, top-p 0.9), one question per task"
        [qwen-sampled-tasks-avx2]="Qwen2.5-Coder-1.5B + 0.5B int8 draft, sampled (T = 0.7, top-p 0.9), one question per task, on a host without AVX-512"
        [smollm2-sampled]="SmolLM2-135M, no draft model, sampled (T = 0.7, top-p 0.9)")
{
  echo "# Spec-Bench-style leaderboard"
  echo
  echo "Generated by \`docs/spec-bench/run.sh\` (results: \`docs/spec-bench/*/spec_bench.json\`; the same tables, but the one on both engines, are sections of docs/BENCHMARKS.md): our own Spec-Bench-format sample, one question per category (13 questions, 21 turns; the table on both engines one question per task), 128 new tokens a turn; each table's caption says how many repeats each turn's time is the median of. Greedy answers were token-identical to standard decoding unless a table says otherwise. One question per category: a task's figure is one or two questions' worth."
  echo
  echo "## Issue #22's goals"
  echo
  echo "Read off the runs below by \`docs/spec-bench/goals.py\` (Spec-Bench's arithmetic; a task of one question is one answer's worth). Where a goal is missed, \"What it says\" below says why, with the numbers. The goals on the bench's own categories are in docs/AUTO.md."
  echo
  $python docs/spec-bench/goals.py
  echo
  echo "## Every run"
  echo
  echo "Each run's latest figures, one row each (\`docs/spec-bench/latest.py\`, the README's table): overall speedups over our standard decoding, Spec-Bench's arithmetic, and auto against transformers' assisted defaults overall and on auto's worst task."
  echo
  $python docs/spec-bench/latest.py
  for setup in qwen qwen-engines qwen-tasks qwen-tasks-avx2 qwen-two-per-task qwen-two-per-task-avx2 qwen-other-half qwen-other-half-avx2 qwen-long qwen-long-avx2 qwen-fp32-tasks qwen-fp32-tasks-avx2 qwen-recycling smollm2 smollm2-other-half smollm2-other-half-avx2 qwen-sampled qwen-sampled-tasks qwen-sampled-tasks-avx2 smollm2-sampled smollm2-sampled-other-half; do
    [[ -f docs/spec-bench/$setup/spec_bench.md ]] || continue
    echo
    echo "## ${titles[$setup]}"
    echo
    cat "docs/spec-bench/$setup/spec_bench.md"
  done
  echo
  cat docs/spec-bench/notes.md
} > docs/SPEC-BENCH.md
