"""Frozen settings shared by the engine, the CLI, the app and the benchmarks."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen. temperature == 0 means greedy (argmax), its own branch."""

    temperature: float = 0.0
    top_k: int = 0  # 0 keeps every token
    top_p: float = 1.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def __post_init__(self) -> None:
        t, p = self.temperature, self.top_p
        if not (isinstance(t, (int, float)) and math.isfinite(t) and 0.0 <= t <= 100.0):
            raise ValueError(f"temperature must be a finite number in [0, 100] (0 = greedy), got {t!r}")
        if not (isinstance(p, (int, float)) and math.isfinite(p) and 0.0 < p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {p!r}")
        if not (isinstance(self.top_k, int) and self.top_k >= 0):
            raise ValueError(f"top_k must be an integer >= 0 (0 = off), got {self.top_k!r}")


@dataclass(frozen=True)
class Speculation:
    """k tokens are drafted per round; adaptive k grows by 2 after a fully accepted round and
    shrinks by 1 after a rejection (transformers' 'heuristic' schedule), within [1, k_max]."""

    k: int = 4
    adaptive: bool = False
    k_max: int = 16
    # A model draft stops early once it drafts a token it gives less than this probability
    # (transformers' assistant_confidence_threshold; 0 = always draft k). Exactness is unaffected.
    confidence: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.k, int) and 1 <= self.k <= self.k_max):
            raise ValueError(f"k must be an integer in [1, {self.k_max}], got {self.k!r}")
        c = self.confidence
        if not (isinstance(c, (int, float)) and 0.0 <= c < 1.0):
            raise ValueError(f"confidence must be in [0, 1), got {c!r}")
