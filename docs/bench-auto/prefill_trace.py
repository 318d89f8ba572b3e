"""The first rounds of auto's short answers with the first round priced as the prompt's prefill
(CostPolicy.prices_prefill, at the commit that added prefill_ab.py) and as any later round: the Qwen
pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy, each short answer run from the costs one coding answer
taught on this machine (the saved file's acceptance first). A diagnostic: one run each, no
repeats; prefill_ab.py is the A/B.

    cp saved_costs_after_spec_bench_2141fdf.json /tmp/costs_trace.json   # the run saves into it
    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/prefill_trace.py
"""
import sys
import time

sys.argv += ["--turns", "specdec-008-t0,specdec-010-t0,specdec-024-t0,specdec-018-t0,specdec-020-t0,specdec-016-t0"]
from ab_session import qwen_pair, session_turns  # noqa: E402
from specdec.engine.policy import CostPolicy  # noqa: E402

pair = qwen_pair()
pair.remember_costs("/tmp/costs_trace.json")
turns = session_turns(pair)
pair.warm_up(pair.auto(turns[0][1]))
print(pair.costs_status)
list(pair.speculative(pair.auto(turns[0][1])))  # learn this machine's costs on a coding answer
state = pair.learned()
for name, request in turns[1:]:
    for flag in (True, False):
        CostPolicy.prices_prefill = flag
        pair.restore_learned(state)
        start = time.perf_counter()
        rounds = list(pair.speculative(pair.auto(request)))
        seconds = time.perf_counter() - start
        print(name, "prefill" if flag else "later", f"{seconds:.2f}s", sum(len(r.tokens) for r in rounds), "tokens",
              len(rounds), "rounds")
        for r in rounds[:3]:
            print("   ", r.round, r.source, len(r.drafted), r.accepted, f"d={r.draft_seconds:.2f} v={r.verify_seconds:.2f}",
                  [round(c, 2) for c in r.confidences[:12]], r.reason[:140])
