"""This session's two exploration changes together (Thompson draws of the whole acceptance chain,
CostModel.draw_alphas; every round ages the sources that sat it out, CostModel.age_sitting_out)
against neither (alpha_1 drawn alone, aging in plain rounds only), on SmolLM2-135M alone: auto and
token recycling under the cost policy, prompt lookup at k = 4 beside them; greedy, 128 tokens, over
ab_session.py's session (21 turns, each lane its own learned costs and recycling table, two passes:
cold, then warm). The old behaviour is rebuilt here only. Numbers in docs/spec-bench/notes.md.

The two exploration changes of the 2026-11-25 evening session were landed, measured and reverted
(docs/spec-bench/notes.md): this script runs against the commit that has them:

    git worktree add /tmp/explore 4cfe963
    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/smollm2_policy_ab.py > docs/bench-auto/smollm2_policy_ab.txt
"""
from ab_session import print_ratios, run_lanes, smollm2_pair, with_drafter
from specdec.engine import policy

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
pair = smollm2_pair()
recycling = with_drafter("recycling", "cost")
lanes = {"lookup": with_drafter("prompt-lookup", "fixed"), "auto-new": pair.auto, "auto-old": pair.auto,
         "recycling-new": recycling, "recycling-old": recycling}
passes = run_lanes(pair, lanes, before=lambda lane: OLD.__setitem__(0, lane.endswith("-old")))
print_ratios(passes, [("auto-new", "auto-old"), ("recycling-new", "recycling-old")])
