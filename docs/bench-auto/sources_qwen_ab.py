"""auto's sources on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens): every source
(`all`: prompt lookup, lookup-tree, the draft model, draft-tree, token recycling's four trees) against
`lean` (prompt lookup, the draft model, draft-tree), with the draft model at k = 4 beside them, over
ab_session.py's session (21 turns, each lane its own learned costs, two passes: cold, then warm).
`lean` is rebuilt here only. Numbers in docs/spec-bench/notes.md.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/sources_qwen_ab.py > docs/bench-auto/sources_qwen_ab.txt
"""
from ab_session import print_ratios, qwen_pair, run_lanes, with_drafter
from specdec.engine.drafters import mixed
from specdec.engine.drafters.recycling import RecyclingDrafter
from specdec.engine.drafters.tree_drafters import LookupTreeDrafter

VARIANT = ["all"]
every_source = mixed.MixedDrafter.from_options.__func__


def from_options(cls, options):
    drafter = every_source(cls, options)
    if VARIANT[0] == "lean":
        drafter = cls([m for m in drafter.members if not isinstance(m, (LookupTreeDrafter, RecyclingDrafter))])
    return drafter


mixed.MixedDrafter.from_options = classmethod(from_options)
pair = qwen_pair()
lanes = {"dm": with_drafter("draft-model", "fixed"), "all": pair.auto, "lean": pair.auto}
passes = run_lanes(pair, lanes, before=lambda lane: VARIANT.__setitem__(0, lane))
print_ratios(passes, [("all", "dm"), ("lean", "dm"), ("all", "lean")])
