"""What stacking the projections that read one input saves a pass (models/fused.py): each model
loaded eager, then copied, one copy as the fast engine loads it but unstacked (int8 quantized, or
prepacked for oneDNN) and one stacked first (q, k, v and gate, up as one layer each: load_model's
order). Both copies then read the same 100-token context and take the same passes, one after the
other, interleaved pass by pass (so the host's drift falls on both): 40 timed passes of each width
after 5 untimed, with a rollback of the cache before each pass, as a draft or verify round does. The
logits of the two copies are compared at every pass (max |difference|; 0 means bitwise equal).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/fused_projections.py > docs/bench-auto/fused_projections.txt

The models: SmolLM2-135M (the embedded default, fp32, fast engine), the Qwen 0.5B draft in int8 (auto's
CPU draft) and in fp32 (fast engine). Qwen2.5-Coder-1.5B is not in it: two prepacked copies need about
27 GB, more than this 24 GB machine has, and its step reads 7 GB of weights, beside which a call's
fixed cost is small.
"""
import copy
import platform
import statistics
import subprocess
import time

import torch

from specdec.engine.kvcache import CachedModel
from specdec.models.fast import prepack
from specdec.models.fused import fuse_projections
from specdec.models.int8 import quantize_int8
from specdec.models.loading import load_model

MODELS = (("embedded", "fp32"), ("qwen-coder-0.5b", "int8"), ("qwen-coder-0.5b", "fp32"))
WIDTHS = (1, 5, 9)
TIMED, UNTIMED, CONTEXT = 40, 5, 100


def copies(spec: str, precision: str) -> dict[str, torch.nn.Module]:
    """The unstacked and the stacked copy of one model, as the fast engine (or int8) runs them."""
    eager = load_model(spec, "cpu", "float32", engine="eager", log=lambda m: None).model
    stacked = copy.deepcopy(eager)
    fuse_projections(stacked)
    if precision == "int8":
        return {"separate": quantize_int8(eager), "stacked": quantize_int8(stacked)}
    for model in (eager, stacked):
        prepack(model)
    return {"separate": eager, "stacked": stacked}


def race(lanes: dict[str, CachedModel], width: int, before=lambda name: None) -> tuple[dict[str, list[float]], float]:
    """Each lane's seconds a pass over `width` tokens after the context, interleaved pass by pass
    (`before(name)` switches a lane's variant in), and the largest |difference| between the two
    lanes' finite logits (a short head's are -inf outside its rows)."""
    ids = [(13 * i) % 5000 + 100 for i in range(CONTEXT)]
    for name, lane in lanes.items():
        before(name)
        lane.logits(ids, 1)
    seconds, worst = {name: [] for name in lanes}, 0.0
    for step in range(UNTIMED + TIMED):
        fed = ids + [(7 * step + j) % 5000 + 100 for j in range(width)]
        logits = {}
        for name, lane in lanes.items():
            before(name)
            lane.crop(CONTEXT)  # roll back to the context, as a round does after its verify pass
            start = time.perf_counter()
            logits[name] = lane.logits(fed, width)
            if step >= UNTIMED:
                seconds[name].append(time.perf_counter() - start)
        first, second = logits.values()
        finite = first.isfinite()
        worst = max(worst, (second[finite] - first[finite]).abs().max().item())
    return seconds, worst


def print_header(script: str, lanes: str) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# docs/bench-auto/{script} at {commit}, {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}")
    print(f"# model, precision, width: median ms of a pass [quartiles], {lanes}; max |logit difference|")


def print_race(label: str, seconds: dict[str, list[float]], worst: float) -> None:
    """One row: each lane's median [quartiles], then the second lane's median over the first's."""
    cells = []
    for times in seconds.values():
        q = statistics.quantiles(times)
        cells.append(f"{q[1] * 1e3:.1f} [{q[0] * 1e3:.1f}, {q[2] * 1e3:.1f}]")
    first, second = (statistics.median(times) for times in seconds.values())
    print(f"{label}: {cells[0]} -> {cells[1]}; {second / first:.3f}; {worst:.1e}", flush=True)


def main() -> None:
    print_header("fused_projections.py", "separate -> stacked; stacked / separate")
    for spec, precision in MODELS:
        models = copies(spec, precision)
        for width in WIDTHS:
            seconds, worst = race({name: CachedModel(model) for name, model in models.items()}, width)
            print_race(f"{spec} {precision} width {width}", seconds, worst)
        del models


if __name__ == "__main__":
    main()
