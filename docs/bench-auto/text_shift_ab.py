"""The stop rule reading acceptance through this text's log-odds offset from the pair's calibration
(policy.CostPolicy.TEXT_SHIFT, confidence.TextShift) against the pair's calibration alone, 128
tokens, over ab_session.py's session (21 turns, each lane its own learned costs and recycling table;
cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy, or with --sampled
at temperature 0.7, top-p 0.9.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/text_shift_ab.py > docs/bench-auto/text_shift_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/text_shift_ab.py --sampled > docs/bench-auto/text_shift_ab.sampled.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "TEXT_SHIFT", {"shift": True, "pair": False})
