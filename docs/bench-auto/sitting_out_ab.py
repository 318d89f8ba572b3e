"""Aging the sources that sit a drafting round out (CostModel.age_sitting_out: discounted Thompson
sampling) against aging them in plain rounds only, as before, on the Qwen pair (Qwen2.5-Coder-1.5B +
int8 0.5B, greedy, 128 tokens), with the draft model at k = 4 beside them. Same setup as
chain_draws_ab.py (the 21 turns, each lane its own learned costs and token recycling table, lanes
interleaved turn by turn, two passes). The old behaviour is rebuilt here only. Numbers in
docs/spec-bench/notes.md.

The two exploration changes of the 2026-11-25 evening session (Thompson draws of the whole
acceptance chain; every round ages the sources that sat it out) were landed, measured and reverted
(docs/spec-bench/notes.md): this script runs against the commit that has them:

    git worktree add /tmp/explore 4cfe963

    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/sitting_out_ab.py > docs/bench-auto/sitting_out_ab.txt
"""
import time
from dataclasses import replace

from specdec.bench import spec_bench
from specdec.engine import policy
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

OBSERVE, AGE = policy.CostModel.observe, policy.CostModel.age_sitting_out
PLAIN_ONLY = [False]


def observe(self, round, source, free=None):
    self.plain_round = round.k == 0
    OBSERVE(self, round, source, free)


def age_in_plain_rounds_only(self):
    """Before: only a plain round aged the sources it did not test."""
    if not PLAIN_ONLY[0] or self.plain_round:
        AGE(self)


policy.CostModel.observe, policy.CostModel.age_sitting_out = observe, age_in_plain_rounds_only
target = load_model("qwen-coder-1.5b", None, None, False, log=lambda m: None)
draft = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=lambda m: None, quantize="int8")
pair = Pair(target, draft)
base = Request("", 128, Sampling(), Speculation(k=4))
first_of_each = {}
for question in spec_bench.read_questions(spec_bench.SAMPLE):
    first_of_each.setdefault(question.category, question)
turns = []
for question in first_of_each.values():
    for i, text in enumerate(question.turns):
        history = ()
        if i:
            answer = [e.token for e in pair.standard(replace(base, prompt=question.turns[0]))]
            history = ((question.turns[0], pair.tokenizer.decode(answer, skip_special_tokens=True)),)
        turns.append((f"{question.id}-t{i}", replace(base, prompt=text, history=history)))
pair.warm_up(pair.auto(turns[0][1]))
lanes = ["dm", "every-round", "plain-only"]
states = dict.fromkeys(lanes, pair.learned())
tables = {lane: pair.new_recycling_table() for lane in lanes}
for p in range(2):
    total = {lane: [0, 0.0] for lane in lanes}
    for name, request in turns:
        row = []
        for lane in lanes if p == 0 else lanes[::-1]:
            PLAIN_ONLY[0] = lane == "plain-only"
            pair.restore_learned(states[lane])
            r = replace(request, drafter="draft-model") if lane == "dm" else pair.auto(request)
            with pair.recycling_from(tables[lane]):
                start = time.perf_counter()
                rounds = list(pair.speculative(r))
                seconds = time.perf_counter() - start
            states[lane] = pair.learned()
            tokens = sum(len(x.tokens) for x in rounds)
            total[lane][0] += tokens
            total[lane][1] += seconds
            row.append(f"{lane} {tokens / seconds:5.1f} ({tokens / len(rounds):.1f}/pass)")
        print(f"pass{p} {name:16s}", " | ".join(row), flush=True)
    rate = {lane: t / s for lane, (t, s) in total.items()}
    print(f"PASS {p}: " + ", ".join(f"{lane} {r:.2f} tok/s" for lane, r in rate.items())
          + f"; every-round/dm {rate['every-round'] / rate['dm']:.3f}, plain-only/dm {rate['plain-only'] / rate['dm']:.3f},"
          f" every-round/plain-only {rate['every-round'] / rate['plain-only']:.3f}", flush=True)
