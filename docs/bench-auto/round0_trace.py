"""Round 0 of auto, the round that reads the prompt: on chosen questions of the Spec-Bench-format sample,
auto on the Qwen pair (int8 draft, greedy, 128 tokens) from no saved costs, after a warm-up on
specdec-009, each round as turn_stops.py prints it (the choice, then each staged pass's confidences;
S where the draft stopped).

    SPECDEC_COSTS=$(mktemp -d) PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/round0_trace.py \\
        specdec-018,specdec-020,specdec-022,specdec-016,specdec-025,specdec-008,specdec-024,specdec-021 \\
        > docs/bench-auto/round0_trace.txt

first_tokens.py beside it prints the first token each model would give each question.
"""
import sys, time
from dataclasses import replace
from turn_stops import log, logged_take, logged_choice
from ab_session import qwen_pair, BASE
from specdec.bench import spec_bench
from specdec.engine import policy
from specdec.engine.drafters import model
model.ModelDrafter._take, policy.CostPolicy.draft_choice = logged_take, logged_choice
pair = qwen_pair()
qs = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
pair.warm_up(pair.auto(replace(BASE, prompt=qs["specdec-009"].turns[0])))
for qid in sys.argv[1].split(","):
    log.clear()
    start = time.perf_counter()
    for event in pair.speculative(pair.auto(replace(BASE, prompt=qs[qid].turns[0]))):
        print(f"  {event.source or 'plain':20s} drafted {len(event.drafted):2d} kept {event.accepted:2d} | "
              + " ".join(map(str, log)), flush=True)
        log.clear()
    print(f"{qid}: {time.perf_counter() - start:.2f} s", flush=True)
