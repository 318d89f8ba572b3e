"""The text offset's prior (confidence.SHIFT_PRIOR_PRECISION, the precision of the Gaussian prior on
delta, 1 at this commit) at 4 against 1, for auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B),
128 tokens, over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table; cold, then warm). Why: on RAG's 024 one early rejection of a 0.45-confidence token moved the
offset so that a(0.92) read 0.74 against the calibration's 0.86, and the stop rule cut the next
drafts short (docs/bench-auto/round_trace_qwen_tasks_024.txt).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/shift_prior_ab.py > docs/bench-auto/shift_prior_ab.txt
"""
from ab_session import flag_ab
from specdec.engine import confidence

# A module constant, which TextShift.fit reads at each call: flag_ab sets it on the module.
flag_ab(confidence, "SHIFT_PRIOR_PRECISION", {"prior 4": 4.0, "prior 1": 1.0})
