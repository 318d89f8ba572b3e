"""How much of what earlier requests taught a new request keeps (policy.CARRIED_EVIDENCE: the most
observations of a source's acceptance it starts from): 8, the code's, against 16, on the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens) over ab_session.py's session (21 turns, each
lane its own learned costs and recycling table; cold, then warm). More carried evidence draws
tighter at a request's start (less exploration on a short answer) and follows a new text slower.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/carried_evidence_ab.py > docs/bench-auto/carried_evidence_ab.txt
"""
from ab_session import flag_ab, patch_carried_evidence
from specdec.engine.policy import CostModel

# "8" is what policy.CARRIED_EVIDENCE was when this ran (4 since 70d2666), not the default now.
patch_carried_evidence()
flag_ab(CostModel, "CARRIED", {"16": 16.0, "8": 8.0})
