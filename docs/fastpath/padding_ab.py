"""Standard decoding with and without the fast engine's padding (models/fast.py, Padding), on one
loaded model: the plan calibrated at load, then greedy decodes of one prompt alternating the
calibrated plan and no padding, each the same tokens. Medians of the repeats, with every repeat.

    PYTHONPATH=. .venv/bin/python docs/fastpath/padding_ab.py qwen-coder-1.5b > docs/fastpath/padding_ab.txt
"""
import statistics
import sys
import time

from specdec.engine.config import Sampling
from specdec.engine.decoding import standard_decode
from specdec.engine.kvcache import CachedModel
from specdec.models import fast
from specdec.models.loading import load_model

TOKENS, REPEATS = 33, 4
PROMPT = "def quicksort(items):\n    "


def main(name: str) -> None:
    loaded = load_model(name, None, None, False, log=print)
    layers = fast.fast_layers(loaded.model)
    plan = layers[0].padded_rows
    prompt = loaded.tokenizer(PROMPT)["input_ids"]

    def decode(padded: tuple[int, ...]) -> tuple[float, list[int]]:
        for layer in layers:
            layer.padded_rows = padded
        start = time.perf_counter()
        tokens = [event.token for event in standard_decode(CachedModel(loaded.model), prompt, Sampling(), TOKENS)]
        return time.perf_counter() - start, tokens

    setups = {"padded as calibrated": plan, "unpadded": ()}
    for padded in setups.values():  # untimed: kernel selection, allocation
        decode(padded)
    seconds: dict[str, list[float]] = {label: [] for label in setups}
    answers = set()
    for _ in range(REPEATS):
        for label, padded in setups.items():
            took, tokens = decode(padded)
            seconds[label].append(took)
            answers.add(tuple(tokens))
    print(f"plan (a packed pass over n rows runs at plan[n - 1]): {plan}; dense up to {layers[0].dense_rows} rows")
    for label, taken in seconds.items():
        median = statistics.median(taken)
        print(f"{label:22s} {median / TOKENS * 1e3:6.1f} ms a token (median of {REPEATS}; "
              f"{', '.join(f'{t:.2f}' for t in taken)} s for {TOKENS} tokens)")
    print("same tokens:", len(answers) == 1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "qwen-coder-1.5b")
