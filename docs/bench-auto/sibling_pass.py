"""What a chain with a sibling leaf costs the target against the chain alone (confidence.StopRule.sibling
prices the sibling row at v(n + 1) - v(n), v read off the table the chains' passes build): the Qwen
target (Qwen2.5-Coder-1.5B, fast engine) after a 300-token context, each sweep visiting the shapes
in a shuffled order (one pass each, after an untimed one per shape), medians in ms and in steps
(over the same sweep's chain pass of width 1). For a chain of j drafts (a pass over j + 1 tokens):

  chain j       the chain's own pass (CachedModel.logits), as a round without a sibling runs it;
  chain j+1     a chain one longer: the pass width the sibling round's is priced as;
  sibling j     the chain plus a sibling leaf beside its last token, as a tree (CachedModel.verify_tree,
                the tree mask), then the cache settled on the chain's first token kept (a crop) or
                on the sibling kept (a gather of the cache): what a sibling round's pass costs.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/sibling_pass.py [SWEEPS] >> docs/bench-auto/sibling_pass.txt

Result (sibling_pass.txt, 2026-11-28): a sibling round's pass costs what a chain's pass of the same
width does, within the sweeps' spread, the gather after a kept sibling included (sibling 4: 0.94 /
0.97 steps against chain 5's 0.94). So the stop rule prices the sibling's row off the chains' own
table, and the table's cliff is the one the chains see (chain 5 -> 6, a pass of 6 -> 7 tokens: 0.94
-> 1.22 steps), where the rule adds a sibling only if it is expected to keep E * dv / T tokens of
the round's E in T (about 0.4 of a token with the fp32 draft, 0.7 with the int8 one).
"""
import random
import statistics
import sys
import time

from ab_session import qwen_pair
from specdec.engine.tree_verify import Tree

sweeps = int(sys.argv[1]) if len(sys.argv) > 1 else 9
print(f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {sweeps} sweeps")
pair = qwen_pair()
lane = pair._speculative_lane  # the target as the speculative lane runs it
context = pair.tokenizer("The history of the Roman empire spans many centuries, and scholars " * 30)["input_ids"][:300]
filler = context[:12]
chains = range(1, 8)


def chain_pass(j: int) -> None:
    lane.crop(len(context))
    lane.logits(context + filler[:j], j + 1)


def sibling_pass(j: int, kept: str) -> None:
    """The chain of j plus a sibling of its last token; then the next round's settle: the chain's
    first token kept (a crop), or the sibling kept (a gather)."""
    lane.crop(len(context))
    tree = Tree(tuple(filler[:j]) + (filler[j],), tuple(range(-1, j - 1)) + (j - 2,))
    lane.verify_tree(context, tree)
    lane.settle(context + (filler[:1] if kept == "chain" else filler[: j - 1] + [filler[j]]))


shapes = {f"chain {j}": (lambda j=j: chain_pass(j)) for j in range(1, 9)}
shapes |= {f"sibling {j} {kept}": (lambda j=j, kept=kept: sibling_pass(j, kept)) for j in chains
           for kept in ("chain", "sibling")}
lane.reset()
lane.logits(list(context), 1)
for run in shapes.values():  # the first pass of each shape carries one-time costs: untimed
    run()
rng, seconds, steps = random.Random(0), {s: [] for s in shapes}, {s: [] for s in shapes}
for _ in range(sweeps):
    sweep = {}
    for shape in rng.sample(list(shapes), len(shapes)):
        start = time.perf_counter()
        shapes[shape]()
        sweep[shape] = time.perf_counter() - start
    for shape in shapes:
        seconds[shape].append(sweep[shape])
        steps[shape].append(sweep[shape] / sweep["chain 1"])


def row(shape: str) -> str:
    ms = sorted(1e3 * s for s in seconds[shape])
    return f"{shape:22s} {statistics.median(ms):6.1f} ms ({ms[0]:.1f}-{ms[-1]:.1f})  {statistics.median(steps[shape]):.2f} steps"


for j in chains:
    for shape in (f"chain {j}", f"chain {j + 1}", f"sibling {j} chain", f"sibling {j} sibling"):
        print(row(shape))
    print()
