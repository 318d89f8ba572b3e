"""Free sources without a measuring round (engine/policy.py, CostPolicy.choose): auto where prompt
lookup, lookup-tree and token recycling's trees are priced at no draft cost until their own rounds
time them (`free`), against auto that first drafts each of them once to time it (`measured`, the
rule before), over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table; cold, then warm). The cold pass is the one the change is for.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/free_sources_ab.py qwen > docs/bench-auto/free_sources_ab.qwen.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/free_sources_ab.py smollm2 > docs/bench-auto/free_sources_ab.smollm2.txt
"""
import sys

from ab_session import print_ratios, qwen_pair, run_lanes, smollm2_pair
from specdec.engine.policy import CostPolicy

LANE = ["free"]
choose = CostPolicy.choose


def choose_as_lane(self, sources):
    if LANE[0] == "measured":
        self.costs.free.clear()  # no source counts as free: each is drafted once to time it
    return choose(self, sources)


CostPolicy.choose = choose_as_lane
pair = qwen_pair() if sys.argv[1:] == ["qwen"] else smollm2_pair()
passes = run_lanes(pair, {"free": pair.auto, "measured": pair.auto}, before=lambda lane: LANE.__setitem__(0, lane))
print_ratios(passes, [("free", "measured")])
