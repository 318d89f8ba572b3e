"""A free source's alpha_1 read after this request's latest verdict at its first position
(policy.SourceCosts.after_first: P(kept | kept) or P(kept | missed)) against its running mean,
greedy, 128 tokens, over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/after_miss_ab.py > docs/bench-auto/after_miss_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "AFTER_FIRST", {"after-latest": True, "running-mean": False})
