"""Tried, not kept: a free source's first position carried into a new request with 2 observations
against 8, every source's (policy.CARRIED_EVIDENCE), on the Qwen pair (Qwen2.5-Coder-1.5B + int8
0.5B, greedy, 128 tokens) over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm). The variant is patched in for the A/B only
(ab_session.patch_carried_evidence, CostModel.CARRIED_FREE_FIRST).

Why: in `run.sh qwen-other-half` auto lost to the draft model at k = 4 only on the two shortest answers
(a translation of 16 tokens, a QA answer of 11: 1.18x and 1.24x its time), where 6 of their 15
rounds went to prompt lookup or token recycling and each kept nothing: their first position came
carried from the answers before (a summary, which copies), at 8 observations against this text's
one a round.

Result (free_first_ab.txt): 0.974 cold / 0.987 warm, within the noise and below 1. The session's two
short answers moved both ways (translation 5.0 against 4.3 tok/s cold, 4.9 against 5.0 warm; QA 8.4
against 7.1 cold, 6.9 against 8.3 warm).

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/free_first_ab.py > docs/bench-auto/free_first_ab.txt
"""
from ab_session import patch_carried_evidence, flag_ab
from specdec.engine.policy import CostModel

patch_carried_evidence()
CostModel.CARRIED = 8.0  # every other source's, as when it was run (policy.CARRIED_EVIDENCE is 4 since)
flag_ab(CostModel, "CARRIED_FREE_FIRST", {"two": 2.0, "eight": 8.0})
