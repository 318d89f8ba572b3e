"""Which sources auto drafted from, turn by turn, with and without the tree roots evidence (tree_roots_ab.py;
   run at f1b13a5): both lanes cold, one run of each turn, each lane its own costs and table. A diagnostic.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/tree_roots_sources.py > docs/bench-auto/tree_roots_sources.txt
"""
import collections
import time
from ab_session import qwen_pair, session_turns
from specdec.engine.policy import CostModel
pair = qwen_pair()
turns = session_turns(pair)
pair.warm_up(pair.auto(turns[0][1]))
states = {lane: pair.learned() for lane in ("roots", "own")}
tables = {lane: pair.new_recycling_table() for lane in states}
for name, request in turns:
    for lane in states:
        CostModel.TREE_ROOTS = lane == "roots"
        pair.restore_learned(states[lane])
        with pair.recycling_from(tables[lane]):
            start = time.perf_counter()
            rounds = list(pair.speculative(pair.auto(request)))
            seconds = time.perf_counter() - start
        states[lane] = pair.learned()
        by = collections.defaultdict(lambda: [0, 0, 0.0])
        for r in rounds:
            s = by[r.source or "plain"]; s[0] += 1; s[1] += len(r.tokens); s[2] += r.seconds
        n = sum(len(r.tokens) for r in rounds)
        print(f"{name:14s} {lane:5s} {n/seconds:5.1f} tok/s", " ".join(f"{k}:{v[0]}r/{v[1]}t/{v[2]:.1f}s" for k, v in sorted(by.items())), flush=True)
