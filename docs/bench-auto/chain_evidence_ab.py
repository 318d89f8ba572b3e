"""Two changes to auto's evidence on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128
tokens), over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table; cold, then warm):

- `chain`: a greedy draft tree's round teaches the draft-model chain too (CostModel.observe_chain:
  the tree's likeliest path is the chain's draft);
- `lookup reach`: prompt lookup's reach restarts with each request, as a tree's does
  (CostPolicy.depth_reach).

Lanes: `both` (the code), `chain` (the old reach), `neither` (the old reach, no chain evidence). The
old behaviour is rebuilt here only.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/chain_evidence_ab.py > docs/bench-auto/chain_evidence_ab.txt
"""
from ab_session import print_ratios, qwen_pair, run_lanes
from specdec.engine import policy

OBSERVE_CHAIN, DEPTH_REACH = policy.CostModel.observe_chain, policy.CostPolicy.depth_reach


def carried_reach(self, source):
    """Before: only a tree restarted its reach per request; prompt lookup kept the carried depth."""
    costs = self.costs.source(source)
    depth = costs.request_depth if policy.tree_budget(source) is not None else costs.tested_depth
    return max(self.MIN_REACH, 2 * depth)


def switch(lane: str) -> None:
    policy.CostModel.observe_chain = OBSERVE_CHAIN if lane != "neither" else (lambda self, tree: None)
    policy.CostPolicy.depth_reach = DEPTH_REACH if lane == "both" else carried_reach


pair = qwen_pair()
passes = run_lanes(pair, {"both": pair.auto, "chain": pair.auto, "neither": pair.auto}, before=switch)
print_ratios(passes, [("both", "neither"), ("chain", "neither"), ("both", "chain")])
