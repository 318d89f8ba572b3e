"""Does pricing a tree by its own yield cost SmolLM2 anything? An A/B of the cost model's two ways to
count a tree round whose accepted path ends at a leaf above the tree's depth: `-new`, a miss at the next
position (policy.py, CostModel.observe: what the code does), against `-old`, untested there (how it
counted before, restored here in this script only by rewriting the two calls). SmolLM2, no draft model:
the Spec-Bench sample's 13 first turns, 128 tokens each, one process; each pass starts from the same
learned costs and warm recycling table, variants alternate (ABCD, DCBA). Numbers in
docs/spec-bench/notes.md.

    .venv/bin/python docs/bench-auto/tree_yield_ab.py
    T=0.7 REPS=4 VARIANTS=recycling-new,recycling-old .venv/bin/python docs/bench-auto/tree_yield_ab.py
"""
import collections, inspect, os, sys, textwrap, time
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec import Pair, Request, Speculation, load_model
from specdec.bench import spec_bench
from specdec.engine.config import Sampling
from specdec.engine import policy as P
# The old count, rebuilt from the current source with the two calls rewritten (leaf-ends untested).
NEW = P.CostModel.observe
src = textwrap.dedent(inspect.getsource(P.CostModel.observe))
src = src.replace("costs.observe(round.draft_length, round.accepted,", "costs.observe(round.tested_length, round.accepted,")
assert "tested_length" in src
ns = dict(vars(P)); exec(src, ns); OLD = ns["observe"]
NEW_S = P.CostModel.observe_smaller_trees
s2 = textwrap.dedent(inspect.getsource(P.CostModel.observe_smaller_trees)).replace("costs.observe(within.depth,", "costs.observe(within.tested_length,")
assert "tested_length" in s2
exec(s2, ns); OLD_S = ns["observe_smaller_trees"]
temperature = float(os.environ.get("T", "0"))
sampling = Sampling(temperature=temperature, top_p=0.9 if temperature else 1.0, seed=0)
pair = Pair(load_model("embedded", log=lambda m: None), None)
turns = [q.turns[0] for q in spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0)]
base = Request(turns[0], 128, spec=Speculation(policy="cost", k_max=16), sampling=sampling)
recycling = lambda r: replace(r, drafter="recycling")
setups = {"recycling": recycling, "auto": pair.auto}
for s in setups.values(): pair.warm_up(s(base))
for t in turns: list(pair.speculative(recycling(replace(base, prompt=t))))  # a session's table
learned, table = pair.learned(), pair.recycling_table().copy()
names = os.environ.get("VARIANTS", "recycling-new,recycling-old,auto-new,auto-old").split(",")
speeds = collections.defaultdict(list)
for rep in range(int(os.environ.get("REPS", "2"))):
    for name in names if rep % 2 == 0 else names[::-1]:
        old = name.endswith("-old")
        P.CostModel.observe, P.CostModel.observe_smaller_trees = (OLD, OLD_S) if old else (NEW, NEW_S)
        pair.restore_learned(learned)
        tokens = passes = seconds = ss = st = 0
        per = []
        with pair.recycling_from(table.copy()):
            for t in turns:
                req = setups[name.rsplit("-", 1)[0]](replace(base, prompt=t))
                a = time.perf_counter(); st += sum(1 for _ in pair.standard(req)); ss += time.perf_counter() - a
                a = time.perf_counter(); rounds = list(pair.speculative(req)); el = time.perf_counter() - a
                seconds += el; n = sum(len(r.tokens) for r in rounds); tokens += n; passes += len(rounds)
                per.append(f"{n/el:.0f}")
        speeds[name].append(tokens / seconds)
        print(f"{name} run {rep+1}: {tokens/seconds:.1f} tok/s, {tokens/passes:.2f}/pass; standard {st/ss:.1f}; per turn {' '.join(per)}", flush=True)
for name, runs in speeds.items(): print(f"{name}: mean {sum(runs)/len(runs):.1f} over {len(runs)}")
