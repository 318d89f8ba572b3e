"""This session's two exploration changes together (Thompson draws of the whole acceptance chain,
CostModel.draw_alphas; every round ages the sources that sat it out, CostModel.age_sitting_out)
against neither (alpha_1 drawn alone, aging in plain rounds only), on SmolLM2-135M alone: auto and
token recycling under the cost policy, prompt lookup at k = 4 beside them. Greedy, 128 tokens, the
21 turns of fall_ab.py; each lane its own learned costs and recycling table from turn to turn;
lanes interleaved turn by turn, two passes (the second in the other order). The old behaviour is
rebuilt here only. Numbers in docs/spec-bench/notes.md.

The two exploration changes of the 2026-11-25 evening session (Thompson draws of the whole
acceptance chain; every round ages the sources that sat it out) were landed, measured and reverted
(docs/spec-bench/notes.md): this script runs against the commit that has them:

    git worktree add /tmp/explore 4cfe963

    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/smollm2_policy_ab.py > docs/bench-auto/smollm2_policy_ab.txt
"""
import time
from dataclasses import replace

from specdec.bench import spec_bench
from specdec.engine import policy
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

CHAIN, OBSERVE, AGE = policy.CostModel.draw_alphas, policy.CostModel.observe, policy.CostModel.age_sitting_out
OLD = [False]


def draw_alphas(self, source, depth, rng):
    if not OLD[0]:
        return CHAIN(self, source, depth, rng)
    alphas = self.position_alphas(source, depth)  # before: alpha_1 drawn, the rest at their means
    if alphas:
        alphas[0] = CHAIN(self, source, 1, rng)[0]
    return alphas


def observe(self, round, source, free=None):
    self.plain_round = round.k == 0
    OBSERVE(self, round, source, free)


def age_sitting_out(self):
    if not OLD[0] or self.plain_round:  # before: plain rounds only
        AGE(self)


policy.CostModel.draw_alphas, policy.CostModel.observe = draw_alphas, observe
policy.CostModel.age_sitting_out = age_sitting_out
pair = Pair(load_model("embedded", None, None, False, log=lambda m: None))
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
lanes = {"lookup": ("prompt-lookup", "fixed", False), "auto-new": ("auto", None, False),
         "auto-old": ("auto", None, True), "recycling-new": ("recycling", "cost", False),
         "recycling-old": ("recycling", "cost", True)}
states = dict.fromkeys(lanes, pair.learned())
tables = {lane: pair.new_recycling_table() for lane in lanes}
for p in range(2):
    total = {lane: [0, 0.0] for lane in lanes}
    for name, request in turns:
        row = []
        for lane in list(lanes) if p == 0 else list(lanes)[::-1]:
            drafter, how, OLD[0] = lanes[lane]
            pair.restore_learned(states[lane])
            r = pair.auto(request) if drafter == "auto" else \
                replace(request, drafter=drafter, spec=replace(request.spec, policy=how))
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
    print(f"PASS {p}: " + ", ".join(f"{lane} {r:.1f}" for lane, r in rate.items())
          + f"; auto new/old {rate['auto-new'] / rate['auto-old']:.3f},"
          f" recycling new/old {rate['recycling-new'] / rate['recycling-old']:.3f}", flush=True)
