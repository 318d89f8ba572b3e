"""Every width's pass time following the machine's level (policy.CostModel.PASS_LEVEL: v(n) = level x
shape(n), the level moved by every pass of a width whose shape is measured) against each width learned
on its own, for auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), 128 tokens, over
ab_session.py's session (21 turns, each lane its own learned costs and recycling table; cold, then
warm). Why: learned width by width, the width drafted most follows the machine and the rest keep the
speed of the last time they were used; on the two-per-task questions, the host ~20% faster after two
answers than at warm-up, v(5) read 177 ms beside v(1) = 204 and v(6) = 264 ms, and every maths round
drafted exactly 4 tokens (docs/spec-bench/notes.md).

Not kept (pass_level_ab.txt): 0.983 / 0.987 cold / warm, per turn 0.983 +- 0.014, the level lane
drafting fewer tokens a pass in most turns that differ (014-t1 3.7 against 6.7 cold). The flag exists
only at c4b73f4, the commit that added this script; the next reverted the code, so at HEAD flag_ab
refuses it.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/pass_level_ab.py > docs/bench-auto/pass_level_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "PASS_LEVEL", {"level": True, "width by width": False})
