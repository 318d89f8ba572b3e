"""Frozen settings shared by the engine, the CLI, the app and the benchmarks."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .policy import POLICIES

# Temperatures below this are greedy. softmax(l / T) is already one-hot to float32 precision for any
# realistic logit gap well above this, and dividing by a far smaller T overflows float32 (T = 1e-40
# turns every logit into inf, softmax into NaN, and sampling into garbage).
MIN_TEMPERATURE = 1e-5
MAX_SEED = 2**63 - 1  # torch's generators take a 64-bit seed


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen. A temperature below MIN_TEMPERATURE (0 included) means greedy
    (argmax), its own branch. top_p keeps at least the most probable token, however small it is."""

    temperature: float = 0.0
    top_k: int = 0  # 0 keeps every token
    top_p: float = 1.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature < MIN_TEMPERATURE

    def __post_init__(self) -> None:
        t, p = self.temperature, self.top_p
        if not (_real(t) and 0.0 <= t <= 100.0):
            raise ValueError(f"temperature must be a finite number in [0, 100] (below {MIN_TEMPERATURE:g} = greedy), got {t!r}")
        if not (_real(p) and 0.0 < p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {p!r}")
        if not (_integer(self.top_k) and self.top_k >= 0):
            raise ValueError(f"top_k must be an integer >= 0 (0 = off), got {self.top_k!r}")
        if not (_integer(self.seed) and 0 <= self.seed <= MAX_SEED):
            raise ValueError(f"seed must be an integer in [0, {MAX_SEED}], got {self.seed!r}")


MAX_TREE_BUDGET, MAX_BRANCHING = 256, 16


@dataclass(frozen=True)
class TreeShape:
    """How the tree drafters (draft-tree, lookup-tree) grow a round's tree; its depth is the round's k.

    budget: nodes the target verifies in its one pass (the root, the last committed token, not
      counted). Tokens a pass yields grow with it; the pass's cost too, and on a small CPU soon.
    branching: the draft model's children per expanded node, and nodes expanded per depth (EAGLE-2's
      top-k); its draft work per depth is one pass over this many tokens. Prompt lookup branches
      wherever earlier matches disagree, up to the budget, and ignores it."""

    budget: int = 16
    branching: int = 4

    def __post_init__(self) -> None:
        if not (_integer(self.budget) and 1 <= self.budget <= MAX_TREE_BUDGET):
            raise ValueError(f"tree budget must be an integer in [1, {MAX_TREE_BUDGET}] nodes, got {self.budget!r}")
        if not (_integer(self.branching) and 1 <= self.branching <= MAX_BRANCHING):
            raise ValueError(f"tree branching must be an integer in [1, {MAX_BRANCHING}], got {self.branching!r}")


@dataclass(frozen=True)
class Speculation:
    """How far to draft. The policy picks each round's k (see engine.policy): "fixed" drafts k every
    round; "heuristic" is transformers' schedule, +2 after a fully accepted round and -1 after a
    rejection, within [1, k_max]; "cost" picks the k in [0, k_max] with the most expected tokens per
    second, whatever k is. adaptive=True is the older spelling of policy="heuristic"."""

    k: int = 4
    adaptive: bool = False
    k_max: int = 16
    # A model draft stops early once it drafts a token it gives less than this probability
    # (transformers' assistant_confidence_threshold; 0 = always draft k). Exactness is unaffected.
    confidence: float = 0.0
    policy: str = "fixed"
    tree: TreeShape = field(default_factory=TreeShape)  # read by the tree drafters only

    def __post_init__(self) -> None:
        if not isinstance(self.tree, TreeShape):
            raise ValueError(f"tree must be a TreeShape, got {self.tree!r}")
        if not isinstance(self.policy, str) or self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; choose one of {', '.join(POLICIES)}")
        if self.adaptive and self.policy == "cost":
            raise ValueError("adaptive=True means policy='heuristic'; it cannot be combined with policy='cost'")
        # One truth for the two spellings: adaptive and policy="heuristic" always agree.
        object.__setattr__(self, "policy", "heuristic" if self.adaptive else self.policy)
        object.__setattr__(self, "adaptive", self.policy == "heuristic")
        if not (_integer(self.k_max) and self.k_max >= 1):
            raise ValueError(f"k_max must be an integer >= 1, got {self.k_max!r}")
        if not (_integer(self.k) and 1 <= self.k <= self.k_max):
            raise ValueError(f"k must be an integer in [1, {self.k_max}], got {self.k!r}")
        c = self.confidence
        if not (_real(c) and 0.0 <= c < 1.0):
            raise ValueError(f"confidence must be in [0, 1), got {c!r}")


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _real(value) -> bool:
    """A finite int or float. Huge ints are fine (no float conversion, so no OverflowError)."""
    if _integer(value):
        return True
    return isinstance(value, float) and math.isfinite(value)
