"""The Spec-Bench run itself, traced: `python -m specdec bench ARGS` with every choice of the cost
policy printed (the chosen source, k and expected gain over plain decoding, the target's pass times
v(n) in ms, the per-round overhead o, and each offered source's acceptance by position, the
observations behind alpha_1 (w), its draft cost in ms (d) and its drafter's yield check (y)), then
what each round drafted and kept. round_trace.py replays one lane alone; this traces the bench's
own lanes interleaved (standard, draft model, auto, transformers), whose timings and history can
lead auto elsewhere.

    SPECDEC_COSTS=$(mktemp -d) PYTHONPATH=. .venv/bin/python docs/bench-auto/bench_trace.py bench \\
        --suite specdec/bench/prompts/spec_bench_sample.jsonl --per-category 2 --sample-seed 0 \\
        --max-new-tokens 128 --prompts specdec-012,specdec-014,specdec-016,specdec-019,specdec-021 \\
        --repeats 1 --target qwen-coder-1.5b --draft qwen-coder-0.5b --draft-quantize int8 \\
        --drafters draft-model,auto,transformers --out /tmp/bt > /tmp/bt.log 2>&1

(docs/bench-auto/bench_trace_016.txt: translation 016's rounds from that run, at e70d58a, when y was
each source's own check. bench_trace_avx2.txt and bench_trace_avx2_saved.txt: runs on a host without
AVX-512, each file's first lines giving its command; bench_trace_016_021_saved.txt: two short answers
from the costs a run of the other half saved at its end.)
"""
import sys

from specdec.engine import policy as P

choose, observe = P.CostPolicy.choose, P.CostModel.observe


def traced_choose(self, sources):
    choice = choose(self, sources)
    views = []
    for source in sources:
        costs = self.costs.source(source)
        alphas = ",".join(f"{a:.2f}" for a in self.costs.position_alphas(source, 4))
        weight = costs.kept[0].weight if costs.kept else 0.0
        scale = self.costs.yield_scale(source)
        checked = f" y={scale:.2f}" if scale is not None else ""
        views.append(f"{source}: a={alphas} w={weight:.1f} d={1e3 * (costs.draft.mean or 0):.0f}{checked}")
    v = {w: round(1e3 * (self.costs.pass_seconds(w) or 0)) for w in (1, 2, 3, 5, 9)}
    print(f"   choose {choice.source} k={choice.k} gain={choice.gain or 0:.2f} v={v} "
          f"o={1e3 * (self.costs.overhead.mean or 0):.0f} | " + " ; ".join(views), flush=True)
    return choice


def traced_observe(self, round, source, free=None):
    print(f"  {round.round:3d} {source or 'plain':18s} drafted {len(round.drafted):2d} kept {round.accepted:2d} "
          f"draft {1e3 * (round.draft_seconds - round.policy_seconds):4.0f} ms verify "
          f"{1e3 * round.verify_seconds:4.0f} ms catch {round.catch_up}", flush=True)
    return observe(self, round, source, free)


P.CostPolicy.choose, P.CostModel.observe = traced_choose, traced_observe
from specdec.cli import main  # noqa: E402  (after the patches)

sys.argv = ["specdec"] + sys.argv[1:]
main()
