"""`python -m specdec bench ARGS` with Python's garbage collector timed (gc.callbacks): after each
round auto observes, the ms its collections took since the last one, by generation; at exit, the
totals. Asked whether collections explain why token recycling's tree rounds read longer target
passes than chains in bench traces (docs/spec-bench/notes.md, session of 2026-11-30 from 02:53).

    SPECDEC_COSTS=$(mktemp -d) PYTHONPATH=. .venv/bin/python docs/bench-auto/gc_during_decoding.py bench \\
        --suite specdec/bench/prompts/spec_bench_sample.jsonl --per-category 2 --sample-seed 0 \\
        --max-new-tokens 128 --prompts specdec-000,specdec-002 --repeats 1 --target qwen-coder-1.5b \\
        --draft qwen-coder-0.5b --draft-quantize int8 --drafters auto --out /tmp/gcb
"""
import gc, sys, time, atexit
from collections import Counter
from specdec.engine import policy as P

state = {"t0": None, "round": Counter(), "total": Counter(), "count": Counter()}

def cb(phase, info):
    if phase == "start":
        state["t0"] = time.perf_counter()
    else:
        dt = time.perf_counter() - state["t0"]
        g = info["generation"]
        state["round"][g] += dt
        state["total"][g] += dt
        state["count"][g] += 1

gc.callbacks.append(cb)
observe = P.CostModel.observe

def traced_observe(self, round, source, free=None):
    r = state["round"]
    tree = "tree" if round.tree is not None else "chain"
    print(f"  {round.round:3d} {source or 'plain':18s} {tree} n={len(round.drafted):2d} verify "
          f"{1e3 * round.verify_seconds:4.0f} ms gc " + " ".join(f"g{g}={1e3*r[g]:.1f}" for g in sorted(r)), flush=True)
    r.clear()
    return observe(self, round, source, free)

P.CostModel.observe = traced_observe
atexit.register(lambda: print("GC totals ms:", {g: round(1e3 * s) for g, s in state["total"].items()},
                              "counts:", dict(state["count"]), "tracked objects:", len(gc.get_objects()), flush=True))
from specdec.cli import main  # noqa: E402
sys.argv = ["specdec"] + sys.argv[1:]
main()
