"""The stop rule told of the token a staged draft pass has already read (drafters.ModelDrafter.
READ_AHEAD: drafting on to m costs m - j - 1 draft tokens more, not m - j, where this token was its
pass's guess; confidence.py, "Read ahead") against every token priced at the draft's mean cost, for
auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), 128 tokens, over ab_session.py's session (21
turns, each lane its own learned costs and recycling table; cold, then warm). Why: on copied text
(a retrieval answer, a summary) drafts stopped at 5 tokens, 5 kept, round after round, at the fast
engine's 6-row cost cliff, although staged passes had read their next tokens already
(docs/bench-auto/draft_round_parts.txt: 9-13 tokens in 2-4 passes where the guesses held).

Not kept (read_ahead_ab.txt): 1.018 / 0.994 cold / warm, per turn 0.993 +- 0.017; the read-ahead lane
made fewer tokens a pass on QA's 020 in both passes (3.6 and 2.6 against 6.0), not traced. The flag
exists only at 9d4d58d, the commit that added this script; the next reverted the code, so at HEAD
flag_ab refuses it.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/read_ahead_ab.py > docs/bench-auto/read_ahead_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.drafters import ModelDrafter

flag_ab(ModelDrafter, "READ_AHEAD", {"read ahead": True, "mean cost": False})
