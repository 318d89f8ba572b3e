"""Does what runs just before a target pass move its time? Qwen2.5-Coder-1.5B (fast engine) passes
over 3 tokens after ~300 committed tokens, each timed right after one of: the int8 0.5B draft's three
decode steps (a draft-model round), a lookup's worth of Python (nothing), or a 50 ms sleep
(threads idle). Interleaved, 20 of each.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/pass_after.py > docs/bench-auto/pass_after.txt
"""
import statistics, time, sys
import torch
from specdec.engine.kvcache import CachedModel
from specdec.models.loading import load_model

log = lambda m: None
target = load_model("qwen-coder-1.5b", None, None, False, log=log)
draft = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=log, quantize="int8")
t, d = CachedModel(target.model), CachedModel(draft.model)
ids = target.tokenizer("def fibonacci(n):\n    " * 40)["input_ids"][:300]
t.logits(ids, 1); d.logits(ids, 1)
extra = [11, 12]

def draft_steps():
    seq = list(ids)
    for _ in range(3):
        seq.append(int(d.logits(seq, 1)[-1].argmax()))

def nothing():
    sum(range(20000))  # a lookup's worth of Python

def sleep():
    time.sleep(0.05)

before = {"after draft steps": draft_steps, "after a lookup": nothing, "after 50 ms idle": sleep}
times = {name: [] for name in before}
for i in range(23):
    for name, run in before.items():
        run()
        start = time.perf_counter()
        t.logits(ids + extra, 3)
        if i >= 3:
            times[name].append(time.perf_counter() - start)
for name, values in times.items():
    q = statistics.quantiles(values, n=4)
    print(f"{name:20s} median {1e3 * statistics.median(values):6.1f} ms (quartiles {1e3 * q[0]:.1f}-{1e3 * q[2]:.1f}, {len(values)} passes)")
