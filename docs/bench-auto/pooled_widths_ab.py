"""The target's pass times pooled over the widths the fast engine runs at one width (policy.CostModel
.run_width, Loaded.pass_widths) against kept apart per width (as before), 128 tokens, over
ab_session.py's session (21 turns, each lane its own learned costs and recycling table; cold, then
warm): auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), greedy. The "apart" lane starts from
the warm-up table seeded width by width, as the cost models were before the change.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/pooled_widths_ab.py > docs/bench-auto/pooled_widths_ab.txt
"""
from ab_session import print_ratios, qwen_pair, run_lanes
from specdec.engine.policy import CostModel

pair = qwen_pair()
print("the target's pass widths:", pair.target.pass_widths, flush=True)
restore, current, reseeded = pair.restore_learned, {}, set()


def restore_learned(learned):
    """The lane's costs; the "apart" lane's first turn re-seeds its table width by width."""
    restore(learned)
    lane = current["lane"]
    if lane == "apart" and lane not in reseeded:
        reseeded.add(lane)
        model = next(iter(pair.costs.values()))
        model.verify.clear()  # (shared in place by every setup's model: sharing_passes)
        model.seed_verify(pair.verify_costs)


def before(lane):
    current["lane"] = lane
    CostModel.POOLED_WIDTHS = lane == "pooled"


pair.restore_learned = restore_learned
passes = run_lanes(pair, {"pooled": pair.auto, "apart": pair.auto}, before=before)
print_ratios(passes, [("pooled", "apart")])
