"""Where a draft-model round's draft seconds go, for auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8
0.5B), greedy, 128 tokens, the first turns of five Spec-Bench sample questions, no saved costs: by
tokens drafted, the median of the seconds counted as drafting (what the cost policy divides by the
tokens drafted for c), the drafter's propose, the draft passes inside it (and how many: a staged pass
reads guesses of the next tokens too, staged.py), what propose spends outside its passes, the token
recycling table's learning from the verify pass (counted as drafting: decoding.py), and the choosing.
The question it answers: does a round's draft cost have a part fixed per round, which k x c would
spread over the tokens (and so over-price deep drafts)?

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_round_parts.py > docs/bench-auto/draft_round_parts.txt
"""
import time, statistics, collections
from dataclasses import replace
from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench
from specdec.engine.drafters import model as M, mixed as X
from specdec.engine import kvcache as KV

questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
pair = qwen_pair()
pair.warm_up(pair.auto(replace(BASE, prompt=questions["specdec-009"].turns[0])))
cur = {}
prop, obs, logits = M.ModelDrafter.propose, X.MixedDrafter.observe, KV.CachedModel.logits
def t_prop(self, *a, **k):
    cur["passes"] = []; t = time.perf_counter(); cur["in"] = True
    d = prop(self, *a, **k); cur["propose"] = time.perf_counter() - t; cur["in"] = False
    return d
def t_obs(self, *a, **k):
    t = time.perf_counter(); r = obs(self, *a, **k); cur["observe"] = time.perf_counter() - t; return r
def t_logits(self, ids, n, *a, **k):
    if not cur.get("in"):
        return logits(self, ids, n, *a, **k)
    t = time.perf_counter(); r = logits(self, ids, n, *a, **k); cur["passes"].append((n, time.perf_counter() - t)); return r
M.ModelDrafter.propose, X.MixedDrafter.observe, KV.CachedModel.logits = t_prop, t_obs, t_logits
rows = []
for qid in "009 018 022 025 024".split():
    q = questions["specdec-" + qid]
    for r in pair.speculative(pair.auto(replace(BASE, prompt=q.turns[0]))):
        if r.round and r.drafted and (r.source or "").startswith("draft-model"):
            passes = cur.get("passes", [])
            rows.append((len(r.drafted), r.catch_up, cur.get("propose", 0), sum(s for _, s in passes), len(passes),
                         cur.get("observe", 0), r.draft_seconds - r.policy_seconds, r.policy_seconds))
        cur.clear()
by = collections.defaultdict(list)
for row in rows:
    by[row[0]].append(row)
print("k n | median ms: drafting(counted) propose passes(n) outside-passes observe policy")
for k in sorted(by):
    rs = by[k]; med = lambda i: 1e3 * statistics.median(r[i] for r in rs)
    print(f"{k:2d} {len(rs):2d} | {med(6):6.1f} {med(2):6.1f} {med(3):6.1f}({statistics.median(r[4] for r in rs):.0f}) "
          f"{med(2) - med(3):5.1f} {med(5):5.1f} {med(7):5.1f}")
