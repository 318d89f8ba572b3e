"""Tried: prompt lookup's one-token matches as their own case ("prompt-lookup/short", learned apart
from matches of 2-3 tokens), against one pooled source; on the Qwen pair (Qwen2.5-Coder-1.5B + int8
0.5B, greedy, 128 tokens) over ab_session.py's session (21 turns, each lane its own learned costs
and recycling table; cold, then warm).

Why: the traced translation 016 of the other half (round_trace_other_half.txt) opened with three
lookups priced at alpha_1 = 0.80, 0.72, 0.64, carried from the copies of the humanities answer
before it, that kept nothing; token recycling already keeps its context matches' hit rates per
match length.

Result, at 7b53320 with the case added (lookup_cases_ab.txt): cases / pooled 1.012x cold, 1.030x
warm (10.49 against 10.36 tokens/s, then 11.02 against 10.69). Per turn it moves both ways by more
than that (translation 016: 5.5 / 5.4 tokens/s cold, 4.8 / 6.8 warm), so the sum is the verdict.
Kept: exact either way, ahead in both passes.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/lookup_cases_ab.py > docs/bench-auto/lookup_cases_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.drafters.lookup import PromptLookupDrafter

flag_ab(PromptLookupDrafter, "SHORT_CASE", {"cases": True, "pooled": False})
