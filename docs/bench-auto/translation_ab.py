"""Token recycling against prompt lookup on translation (issue #23), SmolLM2-135M alone, greedy, 128
tokens: the table and the cost policy's evidence warmed on the Spec-Bench-format sample's other first
turns, then the two translation questions, standard decoding, prompt lookup at k = 4 and token
recycling under the cost policy interleaved, N repeats, each recycling run from the same warm table
and evidence; per run, where recycling's round time goes (choosing, drafting and the table's update,
the target's passes). Numbers in docs/spec-bench/notes.md.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/translation_ab.py 5
"""
import statistics
import sys
import time
from dataclasses import replace

from specdec.bench import spec_bench
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

pair = Pair(load_model("embedded", None, None, False, log=lambda m: None))
questions = spec_bench.read_questions(spec_bench.SAMPLE)
base = Request("", 128, Sampling(), Speculation(k=4))
recycling = lambda text: replace(base, prompt=text, drafter="recycling", spec=replace(base.spec, policy="cost"))  # noqa: E731
lookup = lambda text: replace(base, prompt=text, drafter="prompt-lookup")  # noqa: E731
pair.warm_up(recycling(questions[0].turns[0]))
for question in questions:
    if question.category != "translation":
        list(pair.speculative(recycling(question.turns[0])))
learned, table = pair.learned(), pair.recycling_table().copy()
translations = [q.turns[0] for q in questions if q.category == "translation"]


def timed(request):
    start = time.perf_counter()
    rounds = list(pair.speculative(request))
    return time.perf_counter() - start, rounds


seconds = {"standard": [], "prompt lookup": [], "recycling": []}
for repeat in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    for text in translations:
        start = time.perf_counter()
        list(pair.standard(replace(base, prompt=text)))
        seconds["standard"].append(time.perf_counter() - start)
        lookup_s, lookup_rounds = timed(lookup(text))
        pair.restore_learned(learned)
        with pair.recycling_from(table.copy()):
            recycling_s, rounds = timed(recycling(text))
        seconds["prompt lookup"].append(lookup_s)
        seconds["recycling"].append(recycling_s)
        ms = lambda values: f"{1000 * sum(values):.1f}ms"  # noqa: E731
        print(f"repeat {repeat}: standard {seconds['standard'][-1]:.3f}s, prompt lookup {lookup_s:.3f}s "
              f"({len(lookup_rounds)} passes), recycling {recycling_s:.3f}s ({len(rounds)} passes: choosing "
              f"{ms(r.policy_seconds for r in rounds)}, drafting and the table "
              f"{ms(r.draft_seconds - r.policy_seconds for r in rounds)}, target {ms(r.verify_seconds for r in rounds)};"
              f" prompt lookup's target {ms(r.verify_seconds for r in lookup_rounds)})", flush=True)
for lane, values in seconds.items():
    print(f"{lane}: median {statistics.median(values):.3f}s over {len(values)} runs, total {sum(values):.2f}s")
