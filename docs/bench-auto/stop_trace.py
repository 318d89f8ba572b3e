"""Why a model draft stopped where it did: auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B),
greedy, 128 tokens, over one question per Spec-Bench task in run.sh qwen-tasks' order (so the costs a
question starts from are those the questions before it taught, as in the bench); for each round of
the questions named, what it drafted and kept, the drafted tokens' confidences, and the stop rule it
drafted under: the draft's cost a token, v(1..10), the position averages, a(c) at a few confidences
(through this text's offset, confidence.TextShift), and the survival s_j and rate E_j / T_j at each
drafted depth j. A diagnostic, not a benchmark.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/stop_trace.py specdec-024,specdec-017
"""
import sys, time
from dataclasses import replace
from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench
from specdec.engine import policy as P
SUBSET = "specdec-009,specdec-017,specdec-018,specdec-020,specdec-023,specdec-024".split(",")
show = set(sys.argv[1].split(","))
pair = qwen_pair()
questions = [q for q in spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0) if q.id in SUBSET]
pair.warm_up(pair.auto(replace(BASE, prompt=questions[0].turns[0])))
state = {"on": False}
orig = P.CostPolicy.draft_choice
def traced_draft_choice(self, *args, **kwargs):
    choice = orig(self, *args, **kwargs)
    state["choice"] = choice
    return choice
P.CostPolicy.draft_choice = traced_draft_choice
def table(stop, confs):
    """s_j and E_j / T_j after each drafted depth j (confidence.StopRule.keep_drafting's terms)."""
    out = []
    for j in range(1, len(confs) + 1):
        s, e = 1.0, 1.0
        for c in confs[:j]:
            s *= stop.accept(c); e += s
        t = j * stop.draft_seconds + stop.pass_seconds(j + 1) + stop.overhead
        out.append(f"j={j} s={s:.2f} E/T={e/t:.2f}")
    return out
for q in questions:
    state["on"] = q.id in show
    start = time.perf_counter(); n = 0
    for r in pair.speculative(pair.auto(replace(BASE, prompt=q.turns[0]))):
        n += len(r.tokens)
        ch = state.pop("choice", None)
        if state["on"]:
            print(f"{r.round} {r.source} drafted {len(r.drafted)} kept {r.accepted} d={r.draft_seconds:.3f} v={r.verify_seconds:.3f} conf={[round(c,2) for c in r.confidences]}")
            if ch is not None and ch.stop is not None:
                st = ch.stop
                print("   d/tok %.3f v(1..10) %s o %.3f alphas %s" % (st.draft_seconds, [round(st.pass_seconds(i),3) for i in range(1, 11)], st.overhead, [round(a,2) for a in st.position_alpha[:8]]))
                print("   a(c):", {c: round(st.accept(c), 2) for c in (0.5, 0.75, 0.9, 0.97, 0.999)}, "after(1.0,.9)=", None if st.after is None else round(st.after(1.0, 0.9), 2))
                print("   ", table(st, r.confidences))
    print(q.id, n, "tokens", round(time.perf_counter() - start, 2), "s", flush=True)
