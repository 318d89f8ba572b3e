"""Every round auto plays on the Spec-Bench sample (one question per category, seed 0, as
docs/spec-bench/run.sh samples it), with what the cost model believed when it chose: the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B), greedy, 128 tokens, one run of each turn in order, each later turn
with the answers before it as history. A diagnostic, not a benchmark: it prints, for each round of
the questions named, the choice and its expected gain over plain decoding, each offered source's
acceptance by position (a=alpha_1..alpha_4) with the observations behind alpha_1 (w) and its draft
cost in ms (d), then what the round drafted and kept and what each free source's first token would
have done (True: kept) and a model draft's confidences (and, where a stop rule chose
the length, its a(c) at a few confidences); and, for every turn up to the last named, tokens a round and tokens a
second by source.

    cp ~/.cache/specdec/costs/<the pair's file>.json /tmp/costs.json   # a copy: the run saves into it
    PYTHONPATH=. .venv/bin/python docs/bench-auto/round_trace.py /tmp/costs.json specdec-015,specdec-023
    (- for no saved costs; --sampled: temperature 0.7, top-p 0.9, seed 0, as run.sh's sampled setups;
    --only: the named questions alone, in the sample's order, as run.sh's one-question-per-task setups;
    --other-half: the 13 questions the seed-0 draw leaves out, in order, as run.sh's *-other-half setups)
"""
import collections
import sys
import time
from dataclasses import replace

from ab_session import BASE, SAMPLED, qwen_pair
from specdec.bench import spec_bench
from specdec.engine import policy as P

if "--sampled" in sys.argv:
    sys.argv.remove("--sampled")
    BASE = replace(BASE, sampling=SAMPLED)
only, other_half = "--only" in sys.argv, "--other-half" in sys.argv
for flag in ("--only", "--other-half"):
    if flag in sys.argv:
        sys.argv.remove(flag)
pair = qwen_pair()
if sys.argv[1] != "-":
    pair.remember_costs(sys.argv[1])
show = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else set()
questions = spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0)
if other_half:
    drawn = {q.id for q in questions}
    questions = [q for q in spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 2, 0) if q.id not in drawn]
if only:
    questions = [q for q in questions if q.id in show]
pair.warm_up(pair.auto(replace(BASE, prompt=questions[0].turns[0])))
print("saved costs:", pair.costs_status)
print("verify table:", dict(zip(pair.verify_costs.widths, (round(s, 4) for s in pair.verify_costs.seconds))))
trace: dict = {"on": False}
choose, observe_free = P.CostPolicy.choose, P.CostModel.observe_free


def traced_choose(self, sources):
    choice = choose(self, sources)
    if trace["on"]:
        views = []
        for source in sources:
            costs = self.costs.source(source)
            alphas = ",".join(f"{a:.2f}" for a in self.costs.position_alphas(source, 4))
            weight = costs.kept[0].weight if costs.kept else 0.0
            views.append(f"{source}: a={alphas} w={weight:.1f} d={1e3 * (costs.draft.mean or 0):.0f}")
        trace["choice"] = f"   choose {choice.source} k={choice.k} gain={choice.gain or 0:.2f} | " + " ; ".join(views)
        if choice.stop is not None:  # the stop rule's a(c) at a few confidences
            trace["choice"] += " | a(c): " + ",".join(f"{c}:{choice.stop.accept(c):.2f}" for c in (0.35, 0.55, 0.75, 0.92, 0.995))
    return choice


def traced_free(self, drafts, committed):
    if trace["on"]:
        trace["free"] = {str(n): d.tokens[0] == committed[0] if d.tree is None else None
                         for n, d in drafts.items() if d.tokens}
    return observe_free(self, drafts, committed)


P.CostPolicy.choose, P.CostModel.observe_free = traced_choose, traced_free
last = max((i for i, q in enumerate(questions) if q.id in show), default=len(questions) - 1)
for question in questions[: last + 1]:  # up to the last question shown
    history = ()
    for turn, text in enumerate(question.turns):
        trace["on"] = question.id in show
        request = pair.auto(replace(BASE, prompt=text, history=history))
        start, tokens, by_source = time.perf_counter(), [], collections.defaultdict(lambda: [0, 0, 0.0])
        for r in pair.speculative(request):
            tokens += r.tokens
            mine = by_source[(r.source or "plain").split(":")[0]]
            mine[0], mine[1], mine[2] = mine[0] + 1, mine[1] + len(r.tokens), mine[2] + r.seconds
            if trace["on"]:
                print(trace.pop("choice", ""))
                print(f"  {r.round:3d} {r.source or 'plain':18s} drafted {len(r.drafted):2d} kept {r.accepted:2d} "
                      f"draft {1e3 * (r.draft_seconds - r.policy_seconds):4.0f} ms verify {1e3 * r.verify_seconds:4.0f} ms "
                      f"free {trace.pop('free', {})} conf {','.join(f'{c:.2f}' for c in r.confidences)}")
        print(f"== {question.id} {question.category} turn {turn}: {len(tokens)} tokens in "
              f"{time.perf_counter() - start:.2f} s; " + "; ".join(
                  f"{s} {n} rounds, {t / n:.2f} tokens a round, {t / sec:.1f} tok/s" for s, (n, t, sec) in by_source.items()))
        history = history + ((text, pair.tokenizer.decode(tokens, skip_special_tokens=True)),)
