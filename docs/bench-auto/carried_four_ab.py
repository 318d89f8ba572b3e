"""Tried, then taken (policy.CARRIED_EVIDENCE is 4 since 70d2666): every source's acceptance carried into a new request with 4 observations against 8
(policy.CARRIED_EVIDENCE), on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens) over
ab_session.py's session (21 turns, each lane its own learned costs and recycling table; cold, then
warm). The variant is patched in for the A/B only (ab_session.patch_carried_evidence, CostModel.CARRIED).

Why: round_trace_other_half.txt (`round_trace.py - specdec-016,specdec-021 --other-half`) shows the
two short answers auto loses in `run.sh qwen-other-half` priced on what the answers before taught. On
the QA answer (11 tokens, after a summary that copies) prompt lookup's alpha_1 came in at 0.67 and
its deeper positions at 0.83-0.96, the draft model's alpha_1 at 0.45 (from the translation two
answers back); the draft model then drafted 5 and kept 5 at confidences 0.95-1.00, and its alpha_1
moved only to 0.51, so the next two rounds went to prompt lookup again (expected 2.40x and 2.07x
plain decoding against the draft model's 1.77x) and kept nothing. Sixteen carried observations were
tried before (carried_evidence_ab.py) and lost on the Spec-Bench sample; this tries fewer.

Result (carried_four_ab.txt): **1.007 cold / 1.033 warm**, and the session's two short answers ahead
in both passes (translation 5.1 against 5.0 tok/s, then 5.9 against 4.6; QA 8.5 against 8.0, then
8.7 against 6.6). Within what one A/B's noise has shown here (16 observations read 1.086 / 1.008 in
such an A/B, then lost on the Spec-Bench runs), so not taken in a session without time to rerun the
benchmarks after it. The next session took it and reran them (docs/spec-bench/notes.md, session of
2026-11-28 from 07:53): QA and translation against transformers moved from 0.81x / 0.92x to 0.97x /
1.12x in `run.sh qwen-other-half`, the main sample's auto from 2.04x to 2.17x.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/carried_four_ab.py > docs/bench-auto/carried_four_ab.txt
"""
from ab_session import patch_carried_evidence, flag_ab
from specdec.engine.policy import CostModel

patch_carried_evidence()
flag_ab(CostModel, "CARRIED", {"four": 4.0, "eight": 8.0})
