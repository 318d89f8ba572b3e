"""What a short draft head saves and what it misses (engine/short_head.py), on the Qwen pair's 0.5B
draft (Qwen2.5-Coder-0.5B, vocabulary 151,936, tied head 151,936 x 896).

1. A draft step (one token after a 64-token context) through CachedModel with the whole head and with
   the short one, fp32 on the fast engine and the loader's int8: each the median of 30 after 5, in
   three rounds over the heads in turn; the median of the three.
2. Over the Spec-Bench-format sample's first turns (26 questions, 128 tokens; the int8 draft's own
   greedy answers, which agree with the target's at ~0.9 of positions), the share of answer tokens
   at or above each cut, and the share neither below the cut nor anywhere in the context before it
   (the prompt with its chat template, and the answer so far): what the short head cannot draft.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/short_head.py > docs/bench-auto/short_head.txt
"""
import statistics
import time
from dataclasses import replace

from ab_session import BASE
from specdec.bench import spec_bench
from specdec.engine import short_head
from specdec.engine.kvcache import CachedModel
from specdec.engine.pair import Pair
from specdec.models.loading import load_model

CUTS = (16_384, 32_768, 65_536)


def step_ms(lane: CachedModel) -> float:
    context = list(range(100, 164))
    lane.reset()
    lane.logits(context, 1)
    times = []
    for i in range(35):
        start = time.perf_counter()
        lane.logits(context + [200 + i], 1)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[5:])


def steps() -> None:
    print("1. Draft step, ms (median of 30; three rounds over the heads)")
    for quantize in (None, "int8"):
        draft = load_model("qwen-coder-0.5b", None, None, False, log=lambda m: None, quantize=quantize).model
        lanes = {"whole": CachedModel(draft)} | {f"first {rows:,}": CachedModel(draft, head_rows=rows) for rows in CUTS}
        rounds = {name: [] for name in lanes}
        for _ in range(3):
            for name, lane in lanes.items():
                rounds[name].append(step_ms(lane))
        for name, times in rounds.items():
            print(f"  {quantize or 'fp32 (fast engine)':20} {name:14} {statistics.median(times):6.1f} "
                  f"({', '.join(f'{t:.1f}' for t in times)})")


def misses() -> None:
    pair = Pair(load_model("qwen-coder-0.5b", None, None, False, log=lambda m: None, quantize="int8"))
    answered, outside, unseen = 0, dict.fromkeys(CUTS, 0), dict.fromkeys(CUTS, 0)
    for question in spec_bench.read_questions(spec_bench.SAMPLE):
        request = replace(BASE, prompt=question.turns[0])
        prompt = pair.prompt_ids(request)
        answer = [e.token for e in pair.standard(request)]
        answered += len(answer)
        for i, token in enumerate(answer):
            seen = set(prompt) | set(answer[:i])
            for rows in CUTS:
                outside[rows] += token >= rows
                unseen[rows] += token >= rows and token not in seen
    print(f"\n2. Answer tokens past the cut, over {answered} (the sample's first turns)")
    for rows in CUTS:
        print(f"  first {rows:>6,}: {outside[rows] / answered:6.2%} past it, "
              f"{unseen[rows] / answered:6.2%} past it and not in the context before (short head misses)")
    print(f"  (short_head.ROWS = {short_head.ROWS:,})")


if __name__ == "__main__":
    steps()
    misses()
