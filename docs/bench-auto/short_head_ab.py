"""Tried: the draft reads a short LM head (engine/short_head.py: its first 65,536 rows and the
context's ids), against the whole head; on the Qwen pair (Qwen2.5-Coder-1.5B + 0.5B, greedy, 128
tokens) over ab_session.py's session (21 turns, each lane its own learned costs and recycling table;
cold, then warm), with the fp32 draft (--fp32-draft) and the int8 one.

Why: the 0.5B draft's tied head is 28% of its weights, and a draft step reads them all. short_head.py
times the step (fp32 76.0 ms whole, 68.1 ms short; int8 33.3 and 30.4: short_head.txt) and counts what
the cut misses (0.7% of the sample's answer tokens, the context's ids kept).

Result, fp32 draft (short_head_ab.fp32.txt): short head / whole head 0.994x cold, 1.038x warm, with
tokens per target pass alike; the session's noise is a few percent either way, so the head's 10%
cheaper draft step shows as a small gain at best, never a loss. Kept.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/short_head_ab.py [--fp32-draft] > docs/bench-auto/short_head_ab[.fp32].txt
"""
from ab_session import flag_ab
from specdec.engine import short_head

flag_ab(short_head, "ROWS", {"short head": short_head.ROWS, "whole head": None})
