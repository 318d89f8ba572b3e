"""What the lean decoder layers save a pass (models/lean.py): each model loaded as the fast engine
loads it (stacked projections, int8 or prepacked, lean layers), then run with its layers switched
between the lean forward and transformers' own, the same weights either way. Two caches read the
same 100-token context and take the same passes, one after the other, interleaved pass by pass (so
the host's drift falls on both): 40 timed passes of each width after 5 untimed, with a rollback of
the cache before each pass, as a draft or verify round does. The logits of the two are compared at
every pass (max |difference| over the finite ones; 0 means bitwise equal).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/lean_layers.py > docs/bench-auto/lean_layers.txt

The models: SmolLM2-135M (the embedded default, fp32), the Qwen 0.5B draft in int8 with its short
head (auto's CPU draft, as the drafter reads it), and Qwen2.5-Coder-1.5B (the target, fp32).
"""
import platform
import statistics
import subprocess
import time

import torch

from specdec.engine import short_head
from specdec.engine.kvcache import CachedModel
from specdec.models.lean import is_lean
from specdec.models.loading import load_model

MODELS = (("embedded", None, None), ("qwen-coder-0.5b", "int8", short_head.ROWS), ("qwen-coder-1.5b", None, None))
WIDTHS = (1, 5, 9)
TIMED, UNTIMED, CONTEXT = 40, 5, 100


def switch(layers: list[torch.nn.Module], lean: bool) -> None:
    """Each layer's class: its lean subclass, or the class transformers built (the subclass's base)."""
    for layer, classes in layers:
        layer.__class__ = classes[0] if lean else classes[1]


def race(model: torch.nn.Module, layers, head_rows, width: int) -> tuple[dict[str, list[float]], float]:
    lanes = {"own": CachedModel(model, head_rows=head_rows), "lean": CachedModel(model, head_rows=head_rows)}
    ids = [(13 * i) % 5000 + 100 for i in range(CONTEXT)]
    for name, lane in lanes.items():
        switch(layers, name == "lean")
        lane.logits(ids, 1)
    seconds, worst = {name: [] for name in lanes}, 0.0
    for step in range(UNTIMED + TIMED):
        fed = ids + [(7 * step + j) % 5000 + 100 for j in range(width)]
        logits = {}
        for name, lane in lanes.items():
            switch(layers, name == "lean")
            lane.crop(CONTEXT)  # roll back to the context, as a round does after its verify pass
            start = time.perf_counter()
            logits[name] = lane.logits(fed, width)
            if step >= UNTIMED:
                seconds[name].append(time.perf_counter() - start)
        finite = logits["own"].isfinite()
        worst = max(worst, (logits["lean"][finite] - logits["own"][finite]).abs().max().item())
    return seconds, worst


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# docs/bench-auto/lean_layers.py at {commit}, {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}")
    print("# model, precision, width: median ms of a pass [quartiles], transformers' layers -> lean; lean / own; "
          "max |logit difference|")
    for spec, quantize, head_rows in MODELS:
        model = load_model(spec, "cpu", "float32", quantize=quantize, engine="fast", log=lambda m: None).model
        layers = [(layer, (type(layer), type(layer).__mro__[1])) for layer in model.modules() if is_lean(layer)]
        for width in WIDTHS:
            seconds, worst = race(model, layers, head_rows, width)
            cells = []
            for name in ("own", "lean"):
                q = statistics.quantiles(seconds[name])
                cells.append(f"{q[1] * 1e3:.1f} [{q[0] * 1e3:.1f}, {q[2] * 1e3:.1f}]")
            ratio = statistics.median(seconds["lean"]) / statistics.median(seconds["own"])
            print(f"{spec} {quantize or 'fp32'} width {width}: {cells[0]} -> {cells[1]}; {ratio:.3f}; {worst:.1e}",
                  flush=True)
        del model, layers


if __name__ == "__main__":
    main()
