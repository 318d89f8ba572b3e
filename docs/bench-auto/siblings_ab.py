"""Tried: a greedy model chain adds its draft's second choice as a leaf beside its least sure token,
where the stop rule says the wider pass pays (CostPolicy.SIBLINGS, confidence.StopRule.sibling),
against the chain alone; on the Qwen pair (Qwen2.5-Coder-1.5B + 0.5B, greedy, 128 tokens) over
ab_session.py's session (21 turns, each lane its own learned costs and recycling table; cold, then
warm), with the int8 draft and with the fp32 one (--fp32-draft).

Why: sibling_bound.txt replays the sample's answers: where the draft's top-1 misses, its second
choice is the target's token at 0.81 of the positions (fp32 draft; int8 0.74), and a chain of 4 with
one sibling at its least confident position keeps 4.42 tokens a pass against 4.24 and reads 1.71x
against 1.63x standard decoding (int8: 2.08x against 2.05x), since a target pass over 1-6 tokens
costs the same here. sibling_pass.txt times the tree pass that verifies it.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/siblings_ab.py [--fp32-draft] > docs/bench-auto/siblings_ab[.fp32].txt

Result (2026-11-28, one A/B each): fp32 draft **1.008 cold / 1.027 warm** (siblings_ab.fp32.txt;
the 16-token translation 4.4 against 3.4 tok/s, then 4.4 against 3.8); int8 draft 0.989 / 1.018
(siblings_ab.txt; that translation 4.2 against 6.3, then 5.1 against 5.6, with fewer tokens a round
in both: its rounds went to other sources, which a sibling does not price). Ahead in three passes of
four, by about what the replay said (+5% fp32, +1.5% int8 at a fixed k = 4) shrunk by the rounds
auto gives to sources with no sibling; inside what one such A/B has moved by noise (about 3%).
Taken (CostPolicy.SIBLINGS is True): its row costs nothing measurable on this CPU (sibling_pass.txt)
and it is exact by the tree rule; the Spec-Bench runs after it are in docs/spec-bench/notes.md.
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "SIBLINGS", {"siblings": True, "chains": False})
