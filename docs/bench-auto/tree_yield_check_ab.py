"""A model tree's alpha_1 checked against its own rounds on this request (policy.CostModel.yield_checked:
free sources and model trees), against free sources alone, 128 tokens, over ab_session.py's session
(21 turns, each lane its own learned costs and recycling table; cold, then warm): auto on the Qwen
pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy, or with --sampled at temperature 0.7, top-p 0.9.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/tree_yield_check_ab.py > docs/bench-auto/tree_yield_check_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/tree_yield_check_ab.py --sampled > docs/bench-auto/tree_yield_check_ab.sampled.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "YIELD_CHECKED_TREES", {"trees": True, "free": False})
