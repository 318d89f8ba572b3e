"""How much of what earlier requests taught a new request keeps (policy.CARRIED_EVIDENCE: the most
observations of a source's acceptance it starts from): 8, the code's, against 16, on the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens) over ab_session.py's session (21 turns, each
lane its own learned costs and recycling table; cold, then warm). More carried evidence draws
tighter at a request's start (less exploration on a short answer) and follows a new text slower.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/carried_evidence_ab.py > docs/bench-auto/carried_evidence_ab.txt
"""
from ab_session import print_ratios, qwen_pair, run_lanes
from specdec.engine import policy

DEFAULTS = policy.CostModel.start_request.__defaults__  # (evidence, calibration)


def switch(lane: str) -> None:
    # "8" is what policy.CARRIED_EVIDENCE was when this ran (4 since 70d2666), not the default now.
    policy.CostModel.start_request.__defaults__ = ((16.0 if lane == "16" else 8.0),) + DEFAULTS[1:]


pair = qwen_pair()
passes = run_lanes(pair, {"8": pair.auto, "16": pair.auto}, before=switch)
print_ratios(passes, [("16", "8")])
