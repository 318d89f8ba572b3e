"""A model chain's rounds testing its draft tree's first position (policy.CostModel.observe_tree_roots:
the tree's root children against the round's first token), against the tree learning from its own
rounds alone, 128 tokens, over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy, or
with --sampled at temperature 0.7, top-p 0.9. Tried and reverted: run it at f1b13a5, where the flag
exists (docs/spec-bench/notes.md, the session from 16:10 UTC on 2026-11-27).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/tree_roots_ab.py > docs/bench-auto/tree_roots_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/tree_roots_ab.py --sampled > docs/bench-auto/tree_roots_ab.sampled.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "TREE_ROOTS", {"roots": True, "own": False})
