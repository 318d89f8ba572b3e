"""The CPU fast path: large linear layers get a oneDNN-prepacked copy of their weights, used for
passes over more than a few tokens.

Why. A decode step on a CPU reads every weight once, so a target pass over 5 or 9 tokens should cost
about one step: the weights dominate the bytes, and 9 rows of activations are nothing beside them.
PyTorch's default fp32 path (MKL BLAS over the [out, in] weight) does not get there. Measured on
this project's 2-core Xeon (docs/FASTPATH.md), Qwen2.5-1.5B: a pass over 1, 2 or 3 tokens costs one
step, 0.23 s, at the memory-bandwidth floor; over 5 tokens 2.0 steps, over 9 2.7 (on the 2-core
AMD EPYC of issue #18, 2.1-2.4 and 3.0). The GEMM repacks the weight into its kernel's layout on
every call past a few rows. That cost belongs to the CPU's BLAS, not to speculative decoding, and
it erases most of what verifying k drafts in one pass should save.

What. oneDNN packs a weight matrix once into the blocked layout its kernels read
(`torch.ops.mkldnn._reorder_linear_weight`, the call inductor makes when it freezes a model) and
then multiplies by it without repacking (`torch.ops.mkldnn._linear_pointwise`): the same Qwen pass
over 5 tokens costs 1.2 default steps and over 9 1.45. Its single-token pass may be slower than the
default's (the Xeon: 1.10 steps, 1.21 for SmolLM2's small layers) or faster (the 2-core AMD EPYC:
SmolLM2 decodes 1.8x faster than eager, where MKL's small-row GEMM is slow on every layer;
docs/FASTPATH-EPYC.md), and the default single step is the baseline every speedup is measured
against, which must never be handicapped. So a `FastLinear` keeps both: the dense weight for passes
over up to `dense_rows` tokens, the packed copy for wider ones. `dense_rows` is calibrated once at
load on the whole model (calibrate_dense_rows: the widest pass, up to 4 tokens, at which the dense
kernels are no slower), so the standard lane's steps run on whichever kernel is faster on this
machine. A layer alone would sit in the CPU's cache and time differently from the same layer among
the model's others, whose weights stream from memory: hence the whole model. Every linear layer with
at least MIN_PACKED_WEIGHTS weights is packed (every layer of SmolLM2 and Qwen). An earlier cut at
1 M weights, chosen on the Xeon, left SmolLM2 all but eager (its largest layer has 0.9 M); on the
EPYC, with every layer packed, its passes over 1 to 33 tokens run 1.7x to 4.1x faster than eager's
(docs/FASTPATH-EPYC.md).

Padding. oneDNN's packed kernel is not monotone in the rows it is given: on the 2-core AMD EPYC,
Qwen2.5-1.5B's whole-model pass over 1 row took 342-366 ms and the same pass over 6 rows 265-278 ms
(medians of interleaved repeats; 8 to 16 rows cost as much as 1 again). A pass over fewer rows than
the cheapest width above it is therefore run at that width, the extra rows zeros and their outputs
dropped: rows of a product are independent, so the real rows are what the wider kernel computes for
them. Which widths pay is timed at load like the dense crossover (calibrate_padding, on passes of
the whole model); where none does, nothing is padded. SmolLM2's small layers gain nothing here.

Memory. The packed copies sit beside the dense weights, and the log says how many bytes they add
(Qwen2.5-1.5B: 6.2 GB on 7.1 GB). A tied LM head (the input embedding's matrix) is packed like any
other layer: its dense rows stay the embedding's, shared, and only the packed copy is new. Where
the machine has not that much memory available, the model stays eager and the log says so.

Exactness. Both kernels compute the same products in another order of summation: logits differ by
float rounding (Qwen within 3e-5 measured; a test bounds SmolLM2's at 1e-5 of the logits' scale).
The default path already does this between its 1-row and 5-row kernels, so nothing changes in kind:
both lanes run on the same model, speculative decoding is checked against standard decoding on it,
and a greedy divergence is diagnosed as a numerical tie or a bug exactly as before
(engine/verdicts.py).

Where. fp32 and bf16 on CPU, where oneDNN is available. Elsewhere "fast" is the eager model: on CUDA
the vendor GEMMs already read weights once per pass, and nothing here could be tested on a GPU.
"""
from __future__ import annotations

import time
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

ENGINES = {
    "fast": "CPU: large linear layers also prepacked for oneDNN, so a pass over a few tokens costs about "
            "one step (single-token steps keep the default kernel), and the projections that read one input "
            "stacked into one layer (models/fused.py), and Llama, Qwen2, Qwen3 and Mistral decoder layers "
            "run as one function each (models/lean.py); on a GPU: eager",
    "eager": "PyTorch's default kernels, the model as transformers loads it",
}
# oneDNN picks the packed layout for a batch-size hint; hints from 4 to 16 gave the same speed for
# 1 to 33 rows on the machines measured. 16 sits in the middle of the widths a verify pass has.
PACK_FOR_ROWS = 16
# Smaller layers (the test suite's tiny models) sit in the CPU's cache, where packing has nothing to save.
MIN_PACKED_WEIGHTS = 65_536
MEMORY_MARGIN = 1 << 30  # bytes left free after packing, for activations, caches and the rest
PACKED_DTYPES = (torch.float32, torch.bfloat16)


def default_engine(device: torch.device) -> str:
    return "fast" if device.type == "cpu" else "eager"


def check_engine(engine: str | None) -> None:
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def can_prepack(device: torch.device, dtype: torch.dtype) -> bool:
    return device.type == "cpu" and dtype in PACKED_DTYPES and torch.backends.mkldnn.is_available()


class FastLinear(nn.Module):
    """y = x W^T + b: the dense weight for up to dense_rows rows, a oneDNN-packed copy for more, a
    packed pass over n rows run at padded_rows[n - 1] rows where given (module docstring, Padding)."""

    def __init__(self, linear: nn.Linear, dense_rows: int = 3, padded_rows: tuple[int, ...] = ()):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias  # shared, not copied (a tied head stays tied)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), PACK_FOR_ROWS)
        self.dense_rows = dense_rows
        self.padded_rows = padded_rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        n = rows.shape[0]
        if n <= self.dense_rows:
            return F.linear(x, self.weight, self.bias)
        width = self.padded_rows[n - 1] if n <= len(self.padded_rows) else n
        if width > n:
            rows = torch.cat([rows, rows.new_zeros(width - n, self.in_features)])
        y = torch.ops.mkldnn._linear_pointwise(rows.contiguous(), self.packed, self.bias, "none", [], "")
        return y[:n].reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        padded = {n: w for n, w in enumerate(self.padded_rows, 1) if w > n}
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, dense up to {self.dense_rows} rows, packed above"
                + (f", padded {padded}" if padded else ""))


def packable(model: nn.Module, min_weights: int = MIN_PACKED_WEIGHTS) -> list[str]:
    """Names of the plain nn.Linear layers with at least min_weights weights."""
    return [name for name, module in model.named_modules()
            if type(module) is nn.Linear and module.weight.numel() >= min_weights]


def prepack(model: nn.Module, min_weights: int = MIN_PACKED_WEIGHTS, dense_rows: int | None = None) -> int:
    """Swap each packable layer of model for a FastLinear, in place; returns how many. dense_rows
    None: calibrated on passes of the whole model (see calibrate_dense_rows)."""
    names = packable(model, min_weights)
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, FastLinear(getattr(parent, child), dense_rows if dense_rows is not None else 0))
    if dense_rows is None and names:
        calibrate_padding(fast_layers(model), model_pass(model))  # first: the dense crossover is
        calibrate_dense_rows(fast_layers(model), model_pass(model))  # judged against padded passes
    return len(names)


def model_pass(model: nn.Module) -> Callable[[int], object]:
    """A forward pass of the whole model over `rows` tokens, no cache: the same linear layers at the
    same row counts as a decode step (rows = 1) or a verify pass (rows = k + 1)."""
    device = next(model.parameters()).device
    return lambda rows: model(input_ids=torch.zeros((1, rows), dtype=torch.long, device=device),
                              use_cache=False)


@torch.inference_mode()
def calibrate_dense_rows(layers: list[FastLinear], run: Callable[[int], object], widest: int = 4,
                         repeats: int = 3) -> int:
    """Set every layer's dense_rows to the most rows (0..widest) up to which run(rows) is no slower on
    the dense kernels than on the packed ones, and return it. Each width is timed both ways by its
    fastest of `repeats` calls (the least disturbed by other work); the first width the packed
    kernels win ends the search (past a few rows the dense GEMM only repacks more)."""
    def fastest_with(dense_rows: int, rows: int) -> float:
        for layer in layers:
            layer.dense_rows = dense_rows
        return _fastest(lambda: run(rows), repeats)

    chosen = 0
    for rows in range(1, widest + 1):
        if fastest_with(rows, rows) > fastest_with(rows - 1, rows):
            break
        chosen = rows
    for layer in layers:
        layer.dense_rows = chosen
    return chosen


@torch.inference_mode()
def calibrate_padding(layers: list[FastLinear], run: Callable[[int], object], widest: int = 8,
                      repeats: int = 3, margin: float = 0.05) -> tuple[int, ...]:
    """Time run(rows) on the packed kernels at 1..widest rows, and set every layer's padded_rows: a
    pass over n rows runs at the cheapest width from n to widest, where that is more than `margin`
    cheaper than n itself; returns the plan (padded_rows[n - 1]). Each width is its fastest over
    `repeats` sweeps of every width in turn: this host's speed moves within seconds, and timed back
    to back (all of one width's calls, then the next's) a slow spell fell on one width and the plan
    of one load in four left 1-row passes unpadded."""
    for layer in layers:
        layer.dense_rows, layer.padded_rows = 0, ()
    widths = range(1, widest + 1)
    for rows in widths:  # untimed: kernel selection, allocation
        run(rows)
    seconds = [float("inf")] * widest
    for _ in range(repeats):
        for rows in widths:
            start = time.perf_counter()
            run(rows)
            seconds[rows - 1] = min(seconds[rows - 1], time.perf_counter() - start)
    plan = []
    for n in range(1, widest + 1):
        width = min(range(n, widest + 1), key=lambda w: seconds[w - 1])
        plan.append(width if seconds[width - 1] < (1 - margin) * seconds[n - 1] else n)
    for layer in layers:
        layer.padded_rows = tuple(plan)
    return tuple(plan)


def _fastest(call, repeats: int) -> float:
    call()  # one untimed call: kernel selection, allocation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def packed_bytes(model: nn.Module, min_weights: int = MIN_PACKED_WEIGHTS) -> int:
    """What prepack would add: one copy of each packable layer's weight."""
    layers = [model.get_submodule(n) for n in packable(model, min_weights)]
    return sum(layer.weight.numel() * layer.weight.element_size() for layer in layers)


def available_memory() -> int | None:
    """Bytes the OS could give now (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def fast_layers(model: nn.Module) -> list[FastLinear]:
    return [m for m in model.modules() if isinstance(m, FastLinear)]
