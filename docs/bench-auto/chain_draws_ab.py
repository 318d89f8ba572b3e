"""Thompson draws of auto's whole acceptance chain against alpha_1 alone (the rest at their means), on
the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens), with the draft model at k = 4
beside them. One process; the 21 turns of fall_ab.py (the first question of each category of the
Spec-Bench-format sample, second turns after our standard lane's answer); each lane keeps its own
learned costs and token recycling table from turn to turn (a session), all from the same warm-up; lanes interleaved turn by
turn, two passes (the second from what the first taught, in the other order). The old behaviour is
rebuilt here only. Numbers in docs/spec-bench/notes.md.

The two exploration changes of the 2026-11-25 evening session (Thompson draws of the whole
acceptance chain; every round ages the sources that sat it out) were landed, measured and reverted
(docs/spec-bench/notes.md): this script runs against the commit that has them:

    git worktree add /tmp/explore 4cfe963

    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/chain_draws_ab.py > docs/bench-auto/chain_draws_ab.txt
    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/chain_draws_ab.py smollm2 > docs/bench-auto/chain_draws_ab_smollm2.txt

`smollm2`: SmolLM2-135M alone, where auto's sources are the free ones, with token recycling under the
cost policy both ways too, and prompt lookup at k = 4 as the reference lane.
"""
import sys
import time
from dataclasses import replace

from specdec.bench import spec_bench
from specdec.engine import policy
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

CHAIN = policy.CostModel.draw_alphas


def alpha_1_only(self, source, depth, rng):
    """Before: alpha_1 drawn, deeper positions at their shrunk means (position_alphas)."""
    alphas = self.position_alphas(source, depth)
    if alphas:
        alphas[0] = CHAIN(self, source, 1, rng)[0]
    return alphas


SMOLLM2 = sys.argv[1:] == ["smollm2"]
if SMOLLM2:
    pair = Pair(load_model("embedded", None, None, False, log=lambda m: None))
else:
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
# lane -> (how the lane drafts, its draws); the first lane is the reference ("dm": it says so below)
reference = ("prompt-lookup", "fixed") if SMOLLM2 else ("draft-model", "fixed")
lanes = {"dm": (reference, None), "chain": ("auto", CHAIN), "alpha1": ("auto", alpha_1_only)}
if SMOLLM2:
    lanes.update({"recycling-chain": (("recycling", "cost"), CHAIN), "recycling-alpha1": (("recycling", "cost"), alpha_1_only)})
states = dict.fromkeys(lanes, pair.learned())
# Each lane drafts token recycling from a table of its own, warming over its own session: a lane
# after another on the same turn would otherwise draft from a table holding this very answer.
tables = {lane: pair.new_recycling_table() for lane in lanes}
for p in range(2):
    total = {lane: [0, 0.0] for lane in lanes}
    for name, request in turns:
        row = []
        for lane in list(lanes) if p == 0 else list(lanes)[::-1]:
            how, draws = lanes[lane]
            if draws is not None:
                policy.CostModel.draw_alphas = draws
            pair.restore_learned(states[lane])
            r = pair.auto(request) if how == "auto" else \
                replace(request, drafter=how[0], spec=replace(request.spec, policy=how[1]))
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
          + f"; chain/dm {rate['chain'] / rate['dm']:.3f}, alpha1/dm {rate['alpha1'] / rate['dm']:.3f},"
          f" chain/alpha1 {rate['chain'] / rate['alpha1']:.3f}"
          + (f", recycling chain/alpha1 {rate['recycling-chain'] / rate['recycling-alpha1']:.3f}" if SMOLLM2 else ""),
          flush=True)
