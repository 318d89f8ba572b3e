"""Every width's pass time moved by a share of each pass's surprise (policy.CostModel.DRIFT_SHARE,
learn_pass: the machine's level drifts) against each width learned on its own passes alone, 128
tokens, over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table; cold, then warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy, or with
--sampled at temperature 0.7, top-p 0.9; with --costs PATH both lanes start from a saved cost file,
as a bench run does (saved_costs_after_spec_bench.json: the file a Spec-Bench run at f445cf2 left;
in the run below this machine's table disagreed with its table, so both lanes took its acceptance
and their pass times from their own warm-up table).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/pass_drift_ab.py --costs docs/bench-auto/saved_costs_after_spec_bench.json \
        > docs/bench-auto/pass_drift_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostModel

flag_ab(CostModel, "DRIFT_SHARE", {"shared": CostModel.DRIFT_SHARE, "own": 0.0})
