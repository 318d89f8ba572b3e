"""Free sources priced at their alpha_1's posterior mean (policy.CostPolicy.FREE_AT_MEAN) against a
Thompson draw like every other source's, on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy,
128 tokens) over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table; cold, then warm).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/free_at_mean_ab.py > docs/bench-auto/free_at_mean_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "FREE_AT_MEAN", {"mean": True, "drawn": False})
