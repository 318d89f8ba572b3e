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
import collections
import statistics
import time
from dataclasses import replace

from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench
from specdec.engine.drafters.mixed import MixedDrafter
from specdec.engine.drafters.model import ModelDrafter
from specdec.engine.kvcache import CachedModel

questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
pair = qwen_pair()
pair.warm_up(pair.auto(replace(BASE, prompt=questions["specdec-009"].turns[0])))
this_round: dict = {}  # what the wrappers timed in the round under way
propose, observe, logits = ModelDrafter.propose, MixedDrafter.observe, CachedModel.logits


def timed_propose(self, *args, **kwargs):
    this_round.update(passes=[], proposing=True)
    start = time.perf_counter()
    draft = propose(self, *args, **kwargs)
    this_round.update(propose=time.perf_counter() - start, proposing=False)
    return draft


def timed_observe(self, *args, **kwargs):
    start = time.perf_counter()
    observe(self, *args, **kwargs)
    this_round["observe"] = time.perf_counter() - start


def timed_logits(self, ids, n, *args, **kwargs):
    """A draft pass inside propose, timed; any other pass (the target's) untouched."""
    if not this_round.get("proposing"):
        return logits(self, ids, n, *args, **kwargs)
    start = time.perf_counter()
    out = logits(self, ids, n, *args, **kwargs)
    this_round["passes"].append(time.perf_counter() - start)
    return out


ModelDrafter.propose, MixedDrafter.observe, CachedModel.logits = timed_propose, timed_observe, timed_logits
by_k = collections.defaultdict(list)  # tokens drafted -> (counted, propose, passes, pass count, observe, policy)
for qid in "009 018 022 025 024".split():
    request = pair.auto(replace(BASE, prompt=questions["specdec-" + qid].turns[0]))
    for r in pair.speculative(request):
        if r.round and r.drafted and (r.source or "").startswith("draft-model"):
            passes = this_round.get("passes", [])
            by_k[len(r.drafted)].append((r.draft_seconds - r.policy_seconds, this_round.get("propose", 0.0),
                                         sum(passes), len(passes), this_round.get("observe", 0.0), r.policy_seconds))
        this_round.clear()
print("k n | median ms: drafting(counted) propose passes(n) outside-passes observe policy")
for k, rounds in sorted(by_k.items()):
    def median_ms(i):
        return 1e3 * statistics.median(r[i] for r in rounds)
    print(f"{k:2d} {len(rounds):2d} | {median_ms(0):6.1f} {median_ms(1):6.1f} {median_ms(2):6.1f}"
          f"({statistics.median(r[3] for r in rounds):.0f}) {median_ms(1) - median_ms(2):5.1f} "
          f"{median_ms(4):5.1f} {median_ms(5):5.1f}")
