"""How often the int8 Qwen2.5-Coder-0.5B draft's tokens are kept by Qwen2.5-Coder-1.5B, by the draft's
own confidence, in finer bins than the calibration's tenths: the evidence for confidence.BIN_EDGES.
The draft model at a fixed k = 12 (no confidence stop, so every confidence is tested as it comes),
greedy, 128 new tokens, on the first turn of each question of the Spec-Bench-format sample's seeded
draw (13 questions); a position is counted when every position before it was kept. Cumulative
after each question. Output: calibration_bins.txt.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/calibration_bins.py > docs/bench-auto/calibration_bins.txt
"""
import collections
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ab_session import BASE, qwen_pair  # noqa: E402

from specdec.bench import spec_bench  # noqa: E402
from specdec.engine.config import Speculation  # noqa: E402

EDGES = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)

pair = qwen_pair()
questions = spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0)
tested, kept = collections.Counter(), collections.Counter()
print("question      " + " ".join(f"{f'>={edge}':>12s}" for edge in EDGES) + "   (kept share / tested)")
for question in questions:
    request = replace(BASE, prompt=question.turns[0], drafter="draft-model", spec=Speculation(k=12))
    for round in pair.speculative(request):
        for position, confidence in enumerate(round.confidences[: round.accepted + 1]):
            b = max(i for i, edge in enumerate(EDGES) if confidence >= edge)
            tested[b] += 1
            kept[b] += position < round.accepted
    print(f"{question.id:13s} " + " ".join(
        f"{kept[b] / tested[b]:7.3f}/{tested[b]:<4d}" if tested[b] else f"{'-':>12s}" for b in range(len(EDGES))),
        flush=True)
