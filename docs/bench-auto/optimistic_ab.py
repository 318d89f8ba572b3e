"""Optimistic Bayesian sampling (policy.CostPolicy.OPTIMISTIC: each source's alpha_1 drawn no lower
than its posterior mean) against plain Thompson sampling, on the Qwen pair (Qwen2.5-Coder-1.5B + int8
0.5B, greedy, 128 tokens) over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/optimistic_ab.py > docs/bench-auto/optimistic_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "OPTIMISTIC", {"optimistic": True, "thompson": False})
