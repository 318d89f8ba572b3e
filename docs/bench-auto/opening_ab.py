"""Round 0's acceptance not learned as the text's (policy.CostModel.OPENING_EVIDENCE False, the
engine's) against learned, greedy, 128 tokens, over ab_session.py's session (21 turns, each lane its
own learned costs and recycling table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B +
int8 0.5B).

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/opening_ab.py > docs/bench-auto/opening_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "OPENING_EVIDENCE", {"opening-skipped": False, "opening-learned": True})
