"""auto's sources on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens): every source
(`all`: prompt lookup, lookup-tree, the draft model, draft-tree, token recycling's four trees) against
`lean` (prompt lookup, the draft model, draft-tree), with the draft model at k = 4 beside them; the 21
turns of fall_ab.py; each lane keeps its own learned costs from turn to turn, all from the same
warm-up (only `all` drafts token recycling, so the pair's table is its own); lanes interleaved turn
by turn, two passes: the first from nothing (a cold start: every source measured once), the second
from what the first taught. `lean` is rebuilt here only. Numbers in docs/spec-bench/notes.md.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/sources_qwen_ab.py > docs/bench-auto/sources_qwen_ab.txt
"""
import time
from dataclasses import replace

from specdec.bench import spec_bench
from specdec.engine.config import Sampling, Speculation
from specdec.engine.drafters import mixed
from specdec.engine.drafters.recycling import RecyclingDrafter
from specdec.engine.drafters.tree_drafters import LookupTreeDrafter
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

VARIANT = ["all"]
every_source = mixed.MixedDrafter.from_options.__func__


def from_options(cls, options):
    drafter = every_source(cls, options)
    if VARIANT[0] == "lean":
        drafter = cls([m for m in drafter.members if not isinstance(m, (LookupTreeDrafter, RecyclingDrafter))])
    return drafter


mixed.MixedDrafter.from_options = classmethod(from_options)
target = load_model("qwen-coder-1.5b", None, None, False, log=lambda m: None)
draft = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=lambda m: None, quantize="int8")
pair = Pair(target, draft)
base = Request("", 128, Sampling(), Speculation(k=4))
first_of_each = {}
for question in spec_bench.read_questions(spec_bench.SAMPLE):
    first_of_each.setdefault(question.category, question)
turns = []
for question in first_of_each.values():
    for i, text in enumerate(question.turns):
        history = ()
        if i:
            answer = [e.token for e in pair.standard(replace(base, prompt=question.turns[0]))]
            history = ((question.turns[0], pair.tokenizer.decode(answer, skip_special_tokens=True)),)
        turns.append((f"{question.id}-t{i}", replace(base, prompt=text, history=history)))
pair.warm_up(pair.auto(turns[0][1]))
states = dict.fromkeys(("dm", "all", "lean"), pair.learned())
for p in range(2):
    total = {lane: [0, 0.0] for lane in states}
    for name, request in turns:
        row = []
        for lane in ["dm", "all", "lean"] if p == 0 else ["lean", "all", "dm"]:
            VARIANT[0] = lane
            r = replace(request, drafter="draft-model") if lane == "dm" else pair.auto(request)
            pair.restore_learned(states[lane])
            start = time.perf_counter()
            rounds = list(pair.speculative(r))
            seconds = time.perf_counter() - start
            states[lane] = pair.learned()
            tokens = sum(len(x.tokens) for x in rounds)
            total[lane][0] += tokens
            total[lane][1] += seconds
            row.append(f"{lane} {tokens / seconds:5.1f} ({tokens / len(rounds):.1f}/pass)")
        print(f"pass{p} {name:16s}", " | ".join(row), flush=True)
    rate = {lane: t / s for lane, (t, s) in total.items()}
    print(f"PASS {p}: " + ", ".join(f"{lane} {r:.2f}" for lane, r in rate.items())
          + f"; all/dm {rate['all'] / rate['dm']:.3f} lean/dm {rate['lean'] / rate['dm']:.3f}"
          f" all/lean {rate['all'] / rate['lean']:.3f}", flush=True)
