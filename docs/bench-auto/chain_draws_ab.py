"""Thompson draws of auto's whole acceptance chain against alpha_1 alone (the rest at their means), on
the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens), with the draft model at k = 4
beside them, over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table, two passes: cold, then warm). `smollm2`: SmolLM2-135M alone, where auto's sources are the
free ones, with token recycling under the cost policy both ways too and prompt lookup at k = 4 as
the reference lane. The old behaviour is rebuilt here only. Numbers in docs/spec-bench/notes.md.

The two exploration changes of the 2026-11-25 evening session (Thompson draws of the whole
acceptance chain; every round ages the sources that sat it out) were landed, measured and reverted
(docs/spec-bench/notes.md): this script runs against the commit that has them (the recorded run
was at 902987f, which has the chain draws alone):

    git worktree add /tmp/explore 4cfe963
    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/chain_draws_ab.py > docs/bench-auto/chain_draws_ab.txt
    PYTHONPATH=/tmp/explore .venv/bin/python docs/bench-auto/chain_draws_ab.py smollm2
"""
import sys

from ab_session import print_ratios, qwen_pair, run_lanes, smollm2_pair, with_drafter
from specdec.engine import policy

CHAIN = policy.CostModel.draw_alphas


def alpha_1_only(self, source, depth, rng):
    """Before: alpha_1 drawn, deeper positions at their shrunk means (position_alphas)."""
    alphas = self.position_alphas(source, depth)
    if alphas:
        alphas[0] = CHAIN(self, source, 1, rng)[0]
    return alphas


SMOLLM2 = sys.argv[1:] == ["smollm2"]
pair = smollm2_pair() if SMOLLM2 else qwen_pair()
# lane -> (what it runs, its draws); "dm" is the reference lane (prompt lookup on SmolLM2)
lanes = {"dm": (with_drafter("prompt-lookup" if SMOLLM2 else "draft-model", "fixed"), CHAIN),
         "chain": (pair.auto, CHAIN), "alpha1": (pair.auto, alpha_1_only)}
if SMOLLM2:
    lanes.update({"recycling-chain": (with_drafter("recycling", "cost"), CHAIN),
                  "recycling-alpha1": (with_drafter("recycling", "cost"), alpha_1_only)})


def switch(lane: str) -> None:
    policy.CostModel.draw_alphas = lanes[lane][1]


passes = run_lanes(pair, {lane: run for lane, (run, _) in lanes.items()}, before=switch)
print_ratios(passes, [("chain", "dm"), ("alpha1", "dm"), ("chain", "alpha1")]
             + ([("recycling-chain", "recycling-alpha1")] if SMOLLM2 else []))
