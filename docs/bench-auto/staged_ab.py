"""Staged drafting (specdec/engine/drafters/staged.py) on the Qwen pair (Qwen2.5-Coder-1.5B + int8
0.5B, greedy, 128 tokens): auto whose draft model reads guesses of its next tokens in each pass
(`staged`) against auto whose draft model reads one token a pass (`one`), over ab_session.py's
session (21 turns, each lane its own learned costs and recycling table; cold, then warm).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/staged_ab.py > docs/bench-auto/staged_ab.txt
"""
from ab_session import print_ratios, qwen_pair, run_lanes
from specdec.engine.drafters.model import ModelDrafter
from specdec.engine.drafters.staged import MAX_GUESSES

DEFAULTS = ModelDrafter.__init__.__defaults__  # (confidence, guesser, max_guesses)


def switch(lane: str) -> None:
    """The lane's draft: the code's default, or one token a pass."""
    ModelDrafter.__init__.__defaults__ = DEFAULTS[:-1] + ((MAX_GUESSES if lane == "staged" else 0),)


pair = qwen_pair()
passes = run_lanes(pair, {"staged": pair.auto, "one": pair.auto}, before=switch)
print_ratios(passes, [("staged", "one")])
