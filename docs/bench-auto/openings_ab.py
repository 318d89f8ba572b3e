"""Round 0 chosen on each source's own openings (policy.CostModel.OPENINGS True, the engine's)
against on its acceptance as any round, greedy, 128 tokens, over ab_session.py's session (21 turns,
each lane its own learned costs and recycling table; cold, then warm): auto on the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B). Tried at 9491d1a and not kept (output beside it: 1.019 cold,
0.990 warm, and the translation answer slower in both passes); the flag no longer exists, so this
runs at that commit only (docs/spec-bench/notes.md, session of 2026-11-30 from 05:35).

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/openings_ab.py > docs/bench-auto/openings_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "OPENINGS", {"openings": True, "no-openings": False})
