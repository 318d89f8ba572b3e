"""What one target pass over n tokens costs on this device: the table v(n) that speculation lives on.

A round that drafts k tokens pays one target pass over k + 1 of them, so its expected tokens per
second are E(k) / (k c + v(k + 1)). On a GPU v is nearly flat in n up to dozens of tokens; on a CPU
it depends on the GEMM path (see specdec.models.fast): with PyTorch's default fp32 kernels a pass
over 5 tokens has cost 2 steps and one over 9 about 3, prepacked weights bring both near 1. The cost
policy (policy.py) needs v at every width it may choose; learning it online costs rounds drafted at
the wrong k, so it is measured once at warm-up and given to the policy as its prior, which the
rounds then refine.

Measured as a pass after `context` cached tokens (the prompt), over n further tokens: one untimed
sweep over every width (kernel selection, allocator growth), then `repeats` timed sweeps, each over
every width in turn, and each width's median kept. Sweeps, not each width's passes back to back,
because a shared host's speed drifts by the second: timed one after another, a width met in a slow
second read dear beside its neighbours, and the policy, which prices drafts by the table's shape,
drafted to whichever width happened to read cheap (the 2-core host of docs/spec-bench/notes.md,
one pass a width: v(9) / v(1) read 0.89 to 1.52 in four tables taken a minute apart, v(2) 1.00 to
1.39). Interleaved, a slow second costs each width one sweep, which the median drops: three sweeps
read v(9) at 0.92-1.01 (docs/bench-auto/verify_table_noise.py).
Between measured widths v is read off the line joining them; past the widest it is the widest's
(never extrapolated upwards: a policy must not bet on a width nobody has timed).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

from .kvcache import CachedModel, input_rows
from .timing import Clock

WIDTHS = (1, 2, 3, 5, 9, 17, 33)
SWEEPS = 3  # timed sweeps over every width at warm-up (a sweep: about 3 s of target passes on a 2-core
#            CPU for Qwen2.5-Coder-1.5B, 0.3 s for SmolLM2-135M)


@dataclass(frozen=True)
class VerifyCosts:
    """Median seconds of one target pass over each width of tokens, after `context` cached ones."""

    widths: tuple[int, ...]
    seconds: tuple[float, ...]
    context: int

    def __post_init__(self) -> None:
        if not self.widths or len(self.widths) != len(self.seconds) or list(self.widths) != sorted(set(self.widths)):
            raise ValueError("widths must be distinct, increasing and one per measured time")

    def at(self, width: float) -> float:
        """v(width) in seconds: measured, on the line between measured widths, or the nearest end."""
        pairs = list(zip(self.widths, self.seconds))
        if width <= pairs[0][0]:
            return pairs[0][1]
        for (n0, v0), (n1, v1) in zip(pairs, pairs[1:]):
            if width <= n1:
                return v0 + (v1 - v0) * (width - n0) / (n1 - n0)
        return pairs[-1][1]

    def steps(self, width: float) -> float:
        """v(width) / v(1): a pass over width tokens in decode steps."""
        return self.at(width) / self.at(1)

    def to_json(self) -> dict:
        return {"widths": list(self.widths), "seconds": list(self.seconds), "context": self.context,
                "steps": [self.steps(n) for n in self.widths]}

    @classmethod
    def from_json(cls, data: dict) -> "VerifyCosts":
        return cls(tuple(data["widths"]), tuple(data["seconds"]), data["context"])

    def agrees_with(self, other: "VerifyCosts", tolerance: float = 0.15) -> bool:
        """Whether other looks measured on the same machine in the same state: a single step within
        tolerance (relative), and every common width's cost in steps within tolerance too. A table
        that disagrees means another machine, engine or load, whose learned costs do not carry over."""
        common = sorted(set(self.widths) & set(other.widths))
        close = lambda a, b: abs(a - b) <= tolerance * max(a, b)  # noqa: E731
        return bool(common) and close(self.at(1), other.at(1)) and all(close(self.steps(n), other.steps(n)) for n in common)

    def speed_ratio(self, other: "VerifyCosts", within: float = 2.0) -> float | None:
        """other's decode step over this one's (speed_ratio)."""
        return speed_ratio(other.at(1), self.at(1), within)


def speed_ratio(now: float, then: float, within: float = 2.0) -> float | None:
    """How much slower (above 1) or faster a step now runs than then, where that is within a factor
    of `within` (the same kind of machine); None past it."""
    ratio = now / then
    return ratio if 1 / within <= ratio <= within else None


def measure_verify_costs(target: CachedModel, context_ids: list[int], widths: tuple[int, ...] = WIDTHS,
                         repeats: int = SWEEPS) -> VerifyCosts:
    """Time passes over each width after context_ids in `repeats` interleaved sweeps (see the module
    docstring). The tokens fed are the context's own, repeated: any real ids cost the same."""
    if not context_ids:
        raise ValueError("measuring verify costs needs a non-empty context")
    clock = Clock(target.device)
    filler = (context_ids * (max(widths) // len(context_ids) + 1))[: max(widths)]
    target.reset()
    target.logits(list(context_ids), 1)  # the context, cached once and untimed
    times: dict[int, list[float]] = {width: [] for width in widths}
    for sweep in range(repeats + 1):
        for width in widths:
            target.crop(len(context_ids))  # back to the context: each pass reads it from the cache
            start = clock.now()
            target.logits(list(context_ids) + filler[:width], width)
            if sweep:  # the first sweep carries one-time costs at every width: not kept
                times[width].append(clock.now() - start)
    target.reset()
    return VerifyCosts(tuple(widths), tuple(statistics.median(times[w]) for w in widths), len(context_ids))


def measure_draft_step(draft: torch.nn.Module, context_ids: list[int], repeats: int = 3) -> float:
    """Seconds of one draft pass over a token after context_ids (the median of `repeats`), timed as
    the target's table is: the draft's own step, which scales its saved costs on a machine that now
    runs at another speed (pair.py). The context is the target's ids folded into the draft's
    embedding rows (a draft with another tokenizer reads its own): any ids cost the same."""
    rows = input_rows(draft)
    return measure_verify_costs(CachedModel(draft), [i % rows for i in context_ids], (1,), repeats).at(1)
