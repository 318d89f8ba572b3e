"""A free source's promise checked against its own rounds (policy.CostModel.observe_yield: what
E(k) promised scaled by the drafted tokens its rounds on this request kept over those it promised),
against the running mean alone, greedy, 128 tokens, over ab_session.py's session (21 turns, each
lane its own learned costs and recycling table; cold, then warm): auto on the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B), or with --smollm2 on SmolLM2-135M alone (every source is free).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/yield_check_ab.py > docs/bench-auto/yield_check_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/yield_check_ab.py --smollm2 > docs/bench-auto/yield_check_ab.smollm2.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "YIELD_CHECKED", {"checked": True, "mean": False})
