"""Which of this session's tree changes moved auto on the Qwen pair? An interleaved A/B in one process
(Qwen2.5-Coder-1.5B + int8 0.5B, greedy, the first turns of extraction, stem, humanities and RAG,
128 tokens, from the saved costs, each pass from the same learned state): `now` (the code), `no-reach`
(a tree keeps its carried reach, as chains do), `neither` (also a tree's leaf-end counted as untested,
as before). The old behaviours are rebuilt here only. Numbers in docs/spec-bench/notes.md.

    .venv/bin/python docs/bench-auto/policy_changes_ab.py
"""
import sys, time, inspect, textwrap, collections
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.bench import spec_bench
from specdec.models.loading import costs_file, load_model
from specdec.engine import policy as P
NEW_OBS, NEW_SM, NEW_REACH = P.CostModel.observe, P.CostModel.observe_smaller_trees, P.CostPolicy.depth_reach
ns = dict(vars(P))
exec(textwrap.dedent(inspect.getsource(P.CostModel.observe)).replace("costs.observe(round.draft_length, round.accepted,", "costs.observe(round.tested_length, round.accepted,"), ns); OLD_OBS = ns["observe"]
exec(textwrap.dedent(inspect.getsource(P.CostModel.observe_smaller_trees)).replace("costs.observe(within.depth,", "costs.observe(within.tested_length,"), ns); OLD_SM = ns["observe_smaller_trees"]
def old_reach(self, source): return max(self.MIN_REACH, 2 * self.costs.source(source).tested_depth)
def old_deepest(self, source): return min(self.k_max, P.tree_budget(source) or self.depth_reach(source))
NEW_DEEP = P.CostPolicy.deepest
target = load_model("qwen-coder-1.5b", None, None, False, log=lambda m: None)
draft = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=lambda m: None, quantize="int8")
pair = Pair(target, draft); pair.remember_costs(costs_file(target, draft))
qs = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
ids = ["specdec-011", "specdec-013", "specdec-015", "specdec-024"]
base = Request("", 128, Sampling(), Speculation(k=4))
pair.warm_up(pair.auto(replace(base, prompt=qs[ids[0]].turns[0])))
learned = pair.learned()
variants = {"now": (NEW_OBS, NEW_SM, NEW_REACH, NEW_DEEP), "no-reach": (NEW_OBS, NEW_SM, old_reach, old_deepest),
            "neither": (OLD_OBS, OLD_SM, old_reach, old_deepest)}
res = collections.defaultdict(list)
for rep in range(2):
    for name in (list(variants) if rep == 0 else list(variants)[::-1]):
        P.CostModel.observe, P.CostModel.observe_smaller_trees, P.CostPolicy.depth_reach, P.CostPolicy.deepest = variants[name]
        pair.restore_learned(learned)
        tok = sec = 0; per = []
        for q in ids:
            t = time.perf_counter(); rounds = list(pair.speculative(pair.auto(replace(base, prompt=qs[q].turns[0])))); el = time.perf_counter() - t
            n = sum(len(r.tokens) for r in rounds); tok += n; sec += el; per.append(f"{n/el:.1f}({n/len(rounds):.1f})")
        res[name].append(tok / sec); print(name, rep, f"{tok/sec:.2f} tok/s", " ".join(per), flush=True)
for k, v in res.items(): print(k, sum(v) / len(v))
