"""One yield check per drafter (policy.CostModel.yield_check: the winner's-curse check shared by every
case and budget of a free drafter or a model tree) against one per source, greedy, 128 tokens, over
ab_session.py's session (21 turns, each lane its own learned costs and recycling table; cold, then
warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/yield_shared_ab.py > docs/bench-auto/yield_shared_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "YIELD_SHARED", {"shared": True, "per-source": False})
