"""Does auto need prompt lookup and lookup-tree beside token recycling, now that recycling's trees
hold the context's continuation? An A/B on SmolLM2 (no draft model): the Spec-Bench sample's 13 first
turns, 128 tokens each, in one process; each pass over the turns starts from the same learned costs
and the same warm recycling table, and the variants alternate (ABC, CBA, ...), so no variant always
runs first. Each turn runs the standard lane, then the speculative one.

    .venv/bin/python docs/bench-auto/sources_ab.py               # greedy
    T=0.7 .venv/bin/python docs/bench-auto/sources_ab.py         # sampled, top-p 0.9
    REPS=4 VARIANTS=auto,recycling .venv/bin/python docs/bench-auto/sources_ab.py

Variants: `auto` (Pair.auto: the mixed drafter, every source), `auto-no-lookup` (the same, but where
token recycling is offered the prompt-lookup and lookup-tree sources are not: the mixed drafter's
sources filtered here, in this script only), `recycling` (token recycling alone, the cost policy);
`auto-apart` and `recycling-apart`: the same, but each tree size learns from its own rounds only
(no evidence from a bigger nested tree's rounds, CostModel.observe_smaller_trees, switched off here);
`auto-blind` and `recycling-blind`: the same, but the policy is not shown what the free sources would
have drafted each round (CostPolicy.wants_free_drafts off here), so they learn from their own rounds only.
Numbers in docs/spec-bench/notes.md.
"""
import collections
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec import Pair, Request, Speculation, load_model  # noqa: E402
from specdec.bench import spec_bench  # noqa: E402
from specdec.engine.config import Sampling  # noqa: E402
from specdec.engine.drafters import mixed  # noqa: E402
from specdec.engine.policy import CostModel, CostPolicy  # noqa: E402

ALL_SOURCES = mixed.MixedDrafter.sources
NESTED = CostModel.observe_smaller_trees


def without_lookup(self, ids):
    """The mixed drafter's sources, less the lookup ones wherever token recycling is offered."""
    offered = ALL_SOURCES(self, ids)
    if any(s.startswith("recycling") for s in offered):
        offered = tuple(s for s in offered if not s.startswith(("prompt-lookup", "lookup-tree")))
    return offered


def main() -> None:
    temperature = float(os.environ.get("T", "0"))
    sampling = Sampling(temperature=temperature, top_p=0.9 if temperature else 1.0, seed=0)
    pair = Pair(load_model("embedded", log=lambda message: None), None)
    turns = [q.turns[0] for q in spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0)]
    base = Request(turns[0], 128, spec=Speculation(policy="cost", k_max=16), sampling=sampling)
    recycling = lambda request: replace(request, drafter="recycling")  # noqa: E731
    setups = {"auto": pair.auto, "auto-no-lookup": pair.auto, "recycling": recycling,
              "auto-apart": pair.auto, "recycling-apart": recycling, "auto-blind": pair.auto,
              "recycling-blind": recycling}
    for setup in setups.values():
        pair.warm_up(setup(base))
    for turn in turns:  # a session's table: every turn read once
        list(pair.speculative(setups["recycling"](replace(base, prompt=turn))))
    learned, table = pair.learned(), pair.recycling_table().copy()
    names = os.environ.get("VARIANTS", "auto,auto-no-lookup,recycling").split(",")
    speeds = collections.defaultdict(list)
    for rep in range(int(os.environ.get("REPS", "2"))):
        for name in names if rep % 2 == 0 else names[::-1]:
            mixed.MixedDrafter.sources = without_lookup if name == "auto-no-lookup" else ALL_SOURCES
            CostModel.observe_smaller_trees = (lambda *args: None) if name.endswith("-apart") else NESTED
            CostPolicy.wants_free_drafts = not name.endswith("-blind")
            pair.restore_learned(learned)
            tokens = passes = seconds = standard_seconds = standard_tokens = 0
            with pair.recycling_from(table.copy()):  # the same warm table for every pass
                for turn in turns:
                    request = setups[name](replace(base, prompt=turn))
                    start = time.perf_counter()
                    standard_tokens += sum(1 for _ in pair.standard(request))
                    standard_seconds += time.perf_counter() - start
                    start = time.perf_counter()
                    rounds = list(pair.speculative(request))
                    seconds += time.perf_counter() - start
                    tokens, passes = tokens + sum(len(r.tokens) for r in rounds), passes + len(rounds)
            speeds[name].append(tokens / seconds)
            print(f"{name} run {rep + 1}: {tokens / seconds:.1f} tok/s, {tokens / passes:.2f} tokens a pass; "
                  f"standard {standard_tokens / standard_seconds:.1f} tok/s", flush=True)
    mixed.MixedDrafter.sources, CostModel.observe_smaller_trees, CostPolicy.wants_free_drafts = ALL_SOURCES, NESTED, True
    for name, runs in speeds.items():
        print(f"{name}: mean {sum(runs) / len(runs):.1f} tok/s over {len(runs)} runs")


if __name__ == "__main__":
    main()
