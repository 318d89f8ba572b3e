"""The stop rule's next undrafted token expected by the last drafted token's confidence
(policy.CostPolicy.AFTER_LAST, confidence.StopRule.after) against its position's average, 128
tokens, over ab_session.py's session (21 turns, each lane its own learned costs and recycling table;
cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy, or with --sampled
at temperature 0.7, top-p 0.9. (SmolLM2 alone drafts from no model: no stop rule to change.)

    PYTHONPATH=. .venv/bin/python docs/bench-auto/after_last_ab.py > docs/bench-auto/after_last_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/after_last_ab.py --sampled > docs/bench-auto/after_last_ab.sampled.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "AFTER_LAST", {"after": True, "average": False})
