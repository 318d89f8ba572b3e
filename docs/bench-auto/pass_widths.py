"""What one target pass over n tokens costs on this machine, every width from 1 to 18 and a few past
it, against what a saved cost file learned: the Qwen target (Qwen2.5-Coder-1.5B, fast engine) after
a 300-token context, each sweep visiting the widths in a shuffled order (one pass each, after an
untimed one per width), the median of the sweeps in ms and in steps (v(n) over the same sweep's
v(1): the machine's drift cancels). Run twice a few minutes apart, on this 2-core host the level
moves (a neighbour competing for memory slows the weight reads every width shares), which is why
CostModel.learn_pass moves every width by a share of each pass's surprise. Given a saved cost file
(PATH), it prints that file's warm-up table and the greedy cost model's learned v(n) beside: a width
learned on its own keeps the speed of the last hour it was used in.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/pass_widths.py [SWEEPS] [PATH] >> docs/bench-auto/pass_widths.txt
    (SWEEPS 0: PATH's tables alone, no sweep)
"""
import json
import random
import statistics
import sys
import time

from ab_session import qwen_pair

sweeps = int(sys.argv[1]) if len(sys.argv) > 1 else 9
print(f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {sweeps} sweeps")
if len(sys.argv) > 2:
    saved = json.loads(open(sys.argv[2]).read())
    table = saved["verify_costs"]
    print("saved warm-up table (ms):", {n: round(1e3 * s) for n, s in zip(table["widths"], table["seconds"])})
    for key, model in saved["costs"].items():
        if "|greedy|" in key and model["verify"]:
            learned = sorted((int(n), 1e3 * total / weight) for n, (weight, total) in model["verify"].items())
            print(f"saved learned v(n) (ms), {key}:", {n: round(ms) for n, ms in learned})
if not sweeps:  # (0: the saved file's tables alone)
    sys.exit()
pair = qwen_pair()
lane = pair._speculative_lane  # the target as the speculative lane runs it
context = pair.tokenizer("The history of the Roman empire spans many centuries, and scholars " * 30)["input_ids"][:300]
widths = list(range(1, 19)) + [21, 25, 33]
filler = context[: max(widths)]
lane.reset()
lane.logits(list(context), 1)
for width in widths:  # the first pass at each width carries one-time costs: untimed
    lane.crop(len(context))
    lane.logits(context + filler[:width], width)
rng, seconds, steps = random.Random(0), {n: [] for n in widths}, {n: [] for n in widths}
for _ in range(sweeps):
    order, sweep = rng.sample(widths, len(widths)), {}
    for width in order:
        lane.crop(len(context))
        start = time.perf_counter()
        lane.logits(context + filler[:width], width)
        sweep[width] = time.perf_counter() - start
    for width in widths:
        seconds[width].append(sweep[width])
        steps[width].append(sweep[width] / sweep[1])
for width in widths:
    ms = sorted(1e3 * s for s in seconds[width])
    print(f"v({width:2d}) {statistics.median(ms):6.1f} ms ({ms[0]:.1f}-{ms[-1]:.1f})  "
          f"{statistics.median(steps[width]):.2f} steps")
