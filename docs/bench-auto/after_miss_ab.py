"""A free source's alpha_1 read after this request's latest verdict at its first position
(policy.SourceCosts.after_first: P(kept | kept) or P(kept | missed)) against its running mean,
greedy, 128 tokens, over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/after_miss_ab.py > docs/bench-auto/after_miss_ab.txt

Tried at 0c2a50b (the flag and its tests) and reverted after the cold pass: 0.977 (5.53 against 5.66
tokens/s on a 2-core AVX2 EPYC), the RAG answer 024 3.5 against 4.1 tokens/s and 3.3 against 5.8
tokens a pass. Carried from text where lookup rarely matches, P(kept | missed) read low, and text that
copies lost its lookups after a single miss. The output beside this file stops early in the warm
pass (it was stopped there). Rerun at 0c2a50b: this commit has no such flag.
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "AFTER_FIRST", {"after-latest": True, "running-mean": False})
