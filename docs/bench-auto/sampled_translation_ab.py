"""A cost-model flag on and off (policy.CostModel.<FLAG>, YIELD_CHECKED_TREES unless named: a model
tree's alpha_1 checked against its own rounds on this request) on the short answers where sampled auto
has lost to standard decoding: the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), sampled at
temperature 0.7, top-p 0.9, 128 tokens. The costs are learned from saved costs (a copy of the pair's
file; - for none) and a sampled coding answer (specdec-009's first turn, as run.sh's sampled tasks ask
it before translation), then the sample's two translation questions, seeds 0..N-1: standard decoding
and auto with the flag on and off interleaved (the order alternating), each auto run from the same
learned costs and recycling table. (sampled_translation_ab.chains.txt: the same at ca0ac7c with
YIELD_CHECKED_CHAINS, a variant since removed.)

    cp ~/.cache/specdec/costs/<the pair's file>.json /tmp/costs.json
    PYTHONPATH=. .venv/bin/python docs/bench-auto/sampled_translation_ab.py /tmp/costs.json 10 [FLAG]
"""
import sys
import time
from dataclasses import replace

from ab_session import BASE, SAMPLED, qwen_pair
from specdec.bench import spec_bench
from specdec.engine.policy import CostModel

pair = qwen_pair()
if sys.argv[1] != "-":
    pair.remember_costs(sys.argv[1])
questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
coding = pair.auto(replace(BASE, prompt=questions["specdec-009"].turns[0], sampling=SAMPLED))
pair.warm_up(coding)
list(pair.speculative(coding))
learned, table = pair.learned(), pair.recycling_table().copy()
translations = [q.turns[0] for q in questions.values() if q.category == "translation"]
flag = sys.argv[3] if len(sys.argv) > 3 else "YIELD_CHECKED_TREES"
lanes = {"on": True, "off": False}
totals = {lane: [0, 0.0] for lane in ("standard", *lanes)}
for seed in range(int(sys.argv[2]) if len(sys.argv) > 2 else 10):
    for t, text in enumerate(translations):
        request = replace(BASE, prompt=text, sampling=replace(SAMPLED, seed=seed))
        row = []
        for lane in ["standard", *(lanes if (seed + t) % 2 == 0 else list(lanes)[::-1])]:
            start, trees = time.perf_counter(), ""
            if lane == "standard":
                tokens = sum(1 for _ in pair.standard(request))
            else:
                setattr(CostModel, flag, lanes[lane])
                pair.restore_learned(learned)
                with pair.recycling_from(table.copy()):
                    rounds = list(pair.speculative(pair.auto(request)))
                tokens = sum(len(r.tokens) for r in rounds)
                tree_rounds = sum(str(r.source).startswith("draft-tree") for r in rounds)
                trees = f" ({tree_rounds} of {len(rounds)} rounds a draft tree)"
            seconds = time.perf_counter() - start
            totals[lane][0] += tokens
            totals[lane][1] += seconds
            row.append(f"{lane} {tokens} in {seconds:.2f} s{trees}")
        print(f"seed {seed} translation {t}: " + ", ".join(row), flush=True)
rates = {lane: tokens / seconds for lane, (tokens, seconds) in totals.items()}
print(", ".join(f"{lane} {rate:.2f} tok/s" for lane, rate in rates.items()))
print(", ".join(f"{lane}/standard {rates[lane] / rates['standard']:.3f}" for lane in lanes)
      + f"; {flag} on/off {rates['on'] / rates['off']:.3f}")
