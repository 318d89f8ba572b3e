"""A tree or a lookup tested as deep as the round asked (policy.CostModel.asked_depth), against as
deep as it drafted, greedy, 128 tokens, over ab_session.py's session (21 turns, each lane its own
learned costs and recycling table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B +
int8 0.5B), or with --smollm2 on SmolLM2-135M alone (no draft model: every source is a lookup or a tree).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/offered_depth_ab.py > docs/bench-auto/offered_depth_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/offered_depth_ab.py --smollm2 > docs/bench-auto/offered_depth_ab.smollm2.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "OFFERED_DEPTH", {"asked": True, "drawn": False})
