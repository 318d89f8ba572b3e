"""Tried: the draft reads a short LM head (engine/short_head.py: its first 65,536 rows and the
context's ids), against the whole head; on the Qwen pair (Qwen2.5-Coder-1.5B + 0.5B, greedy, 128
tokens) over ab_session.py's session (21 turns, each lane its own learned costs and recycling table;
cold, then warm), with the fp32 draft (--fp32-draft) and the int8 one.

Why: the 0.5B draft's tied head is 28% of its weights, and a draft step reads them all. short_head.py
times the step (fp32 76.0 ms whole, 68.1 ms short; int8 33.3 and 30.4: short_head.txt) and counts what
the cut misses (0.7% of the sample's answer tokens, the context's ids kept).

Result, at 74634d0: short head / whole head, int8 draft (short_head_ab.txt) 0.993x cold, 1.032x
warm; fp32 draft (short_head_ab.fp32.txt) 1.115x cold, 1.100x warm; tokens per target pass alike.
The fp32 draft's token costs 0.39 of a target step (the int8 one's 0.16), so the step's 10% shows
more there. Kept.

Before: the engine at c13545b built the head's rows for each drafter, and a drafter is made per
request: 0.34 s a request in fp32, 3.3 s in int8 (unpacking the int8 head, repacking its first
rows), and in int8 2.1 s more each time the context brought an id past the cut (reading one row
unpacked the whole head). There the fp32 A/B read 0.994x / 1.038x and the int8 one 0.505x / 0.525x
(short_head_ab.rebuilt-per-request.txt); with the first rows built once (e71a09b) `run.sh
qwen-tasks` still read auto 1.45x our standard decoding (2.20x before the short head), from the
gathers. short_head.py now reads a head's rows once per process (HeadRows;
test_a_heads_rows_are_read_once).

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/short_head_ab.py [--fp32-draft] > docs/bench-auto/short_head_ab[.fp32].txt
"""
from ab_session import flag_ab
from specdec.engine import short_head

flag_ab(short_head, "ROWS", {"short head": short_head.ROWS, "whole head": None})
