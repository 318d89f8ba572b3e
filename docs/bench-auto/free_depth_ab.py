"""A free source's positions past the first carried into a new request with CARRIED_FREE_DEPTH (2)
observations, against CARRIED_EVIDENCE (8 when it ran, 4 since 70d2666) like every other estimate (policy.CostModel.start_request),
greedy, 128 tokens, over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), or with
--smollm2 on SmolLM2-135M alone (no draft model: every source is free).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/free_depth_ab.py > docs/bench-auto/free_depth_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/free_depth_ab.py --smollm2 > docs/bench-auto/free_depth_ab.smollm2.txt
"""
from ab_session import flag_ab
from specdec.engine import policy

flag_ab(policy, "CARRIED_FREE_DEPTH", {"light": 2.0, "whole": policy.CARRIED_EVIDENCE})
