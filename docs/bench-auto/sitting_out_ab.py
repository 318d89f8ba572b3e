"""Aging the sources that sit a drafting round out (CostModel.age_sitting_out: discounted Thompson
sampling) against aging them in plain rounds only, as before, on the Qwen pair (Qwen2.5-Coder-1.5B +
int8 0.5B, greedy, 128 tokens), with the draft model at k = 4 beside them, over ab_session.py's
session (21 turns, each lane its own learned costs and recycling table, two passes: cold, then
warm). The old behaviour is rebuilt here only. Numbers in docs/spec-bench/notes.md.

The two exploration changes of the 2026-11-25 evening session (Thompson draws of the whole
acceptance chain; every round ages the sources that sat it out) were landed, measured and reverted
(docs/spec-bench/notes.md): this script runs against the commit that has them:

    git worktree add /tmp/explore 4cfe963
    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/sitting_out_ab.py > docs/bench-auto/sitting_out_ab.txt
"""
from ab_session import print_ratios, qwen_pair, run_lanes, with_drafter
from specdec.engine import policy

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
pair = qwen_pair()
lanes = {"dm": with_drafter("draft-model", "fixed"), "every-round": pair.auto, "plain-only": pair.auto}
passes = run_lanes(pair, lanes, before=lambda lane: PLAIN_ONLY.__setitem__(0, lane == "plain-only"))
print_ratios(passes, [("every-round", "dm"), ("plain-only", "dm"), ("every-round", "plain-only")])
