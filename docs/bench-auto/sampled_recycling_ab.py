"""Token recycling under the cost policy, sampled (T = 0.7, top-p 0.9), SmolLM2-135M alone, 128 tokens,
on the Spec-Bench-format sample's translation and QA first turns, seeds 0..N-1: the table and
evidence warmed on the sample's other first turns, each run from that same warm state; tokens per
second over all runs (a sampled answer's length varies with its seed, so one run per turn spreads
widely). Run once per code tree to compare (notes.md):

    PYTHONPATH=. .venv/bin/python docs/bench-auto/sampled_recycling_ab.py 10
"""
import sys
import time
from dataclasses import replace

from specdec.bench import spec_bench
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

pair = Pair(load_model("embedded", None, None, False, log=lambda m: None))
questions = spec_bench.read_questions(spec_bench.SAMPLE)
base = Request("", 128, Sampling(temperature=0.7, top_p=0.9), Speculation(k=4))
recycling = lambda text, seed: replace(base, prompt=text, drafter="recycling",  # noqa: E731
                                       sampling=replace(base.sampling, seed=seed), spec=replace(base.spec, policy="cost"))
pair.warm_up(recycling(questions[0].turns[0], 0))
chosen = ("translation", "qa")
for question in questions:
    if question.category not in chosen:
        list(pair.speculative(recycling(question.turns[0], 0)))
learned, table = pair.learned(), pair.recycling_table().copy()
for category in chosen:
    text = next(q.turns[0] for q in questions if q.category == category)
    totals = {"standard": [0, 0.0], "recycling": [0, 0.0]}
    for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
        start = time.perf_counter()
        totals["standard"][0] += len(list(pair.standard(replace(base, prompt=text, sampling=replace(base.sampling, seed=seed)))))
        totals["standard"][1] += time.perf_counter() - start
        pair.restore_learned(learned)
        with pair.recycling_from(table.copy()):
            start = time.perf_counter()
            rounds = list(pair.speculative(recycling(text, seed)))
            totals["recycling"][1] += time.perf_counter() - start
        totals["recycling"][0] += sum(len(r.tokens) for r in rounds)
    rates = {lane: n / s for lane, (n, s) in totals.items()}
    print(f"{category}: standard {rates['standard']:.1f} tok/s, recycling (cost policy) {rates['recycling']:.1f} "
          f"tok/s: {rates['recycling'] / rates['standard']:.3f}x", flush=True)
