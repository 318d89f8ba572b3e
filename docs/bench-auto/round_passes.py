"""Where an auto round's time goes: each round of one answer (auto on the Qwen pair, greedy, 128
tokens, after a warm-up) with its draft and verify seconds as the loop times them, beside every model
pass inside it timed on its own (CachedModel._forward: the target's passes by width, the draft's
count and sum), and the answer's total against the sum of its rounds. Run twice, the second from the
costs the first taught and with token recycling's table after it: the same request again, whose
answer that table has now seen (a repeat's speed, not a new answer's). With --costs PATH the pair starts from saved costs (a copy: PATH is left as
it was), as a bench run does after the questions before it.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/round_passes.py specdec-017 \\
        [--costs PATH] > docs/bench-auto/round_passes.txt
"""
import sys
import time
from dataclasses import replace

from ab_session import BASE, qwen_pair, saved_costs_from_argv
from specdec.bench import spec_bench
from specdec.engine import kvcache

passes: list[tuple[int, int, float]] = []  # (the model's hidden size, tokens fed, seconds)
forward = kvcache.CachedModel._forward


def timed_forward(self, context, n, **inputs):
    start = time.perf_counter()
    out = forward(self, context, n, **inputs)
    passes.append((self.model.config.hidden_size, inputs["input_ids"].shape[-1], time.perf_counter() - start))
    return out


def main() -> None:
    pair = qwen_pair()
    saved_costs_from_argv(pair)
    question = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}[sys.argv[1]]
    request = replace(BASE, prompt=question.turns[0])
    pair.warm_up(pair.auto(request))
    target_width = pair.target.model.config.hidden_size
    kvcache.CachedModel._forward = timed_forward
    for run in range(2):
        start, rounds = time.perf_counter(), 0.0
        for event in pair.speculative(pair.auto(request)):
            target = [(width, round(1e3 * s)) for hidden, width, s in passes if hidden == target_width]
            draft = [s for hidden, _, s in passes if hidden != target_width]
            rounds += event.draft_seconds + event.verify_seconds
            print(f"  {event.source or 'plain':22s} drafted {len(event.drafted):2d} kept {event.accepted:2d} "
                  f"draft {1e3 * event.draft_seconds:5.0f} ms verify {1e3 * event.verify_seconds:5.0f} ms | "
                  f"target passes (width, ms) {target}, draft passes {len(draft)} in {1e3 * sum(draft):.0f} ms")
            passes.clear()
        total = time.perf_counter() - start
        print(f"run {run}: {total:.2f} s, its rounds {rounds:.2f} s, outside them {total - rounds:.2f} s", flush=True)


if __name__ == "__main__":
    main()
