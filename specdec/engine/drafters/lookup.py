"""Drafting by n-gram prompt lookup: no model, no cost."""
from __future__ import annotations

import torch

from ..config import Sampling
from ..sources import Source
from .options import DrafterOptions
from .base import Draft, DrafterBase

MAX_NGRAM = 3  # the longest n-gram matched first (also what transformers' prompt lookup is given in the bench)


class PromptLookupDrafter(DrafterBase):
    """n-gram prompt lookup (Saxena 2023): find the latest earlier occurrence of the last n tokens
    (longest n first) and propose what followed it. Needs no model; deterministic.

    Two cases (sources.py): where only the last token occurred before, its source is
    "prompt-lookup/short", else "prompt-lookup", and the cost policy learns each one's acceptance
    apart, as token recycling keeps its context matches' hit rates per match length. A copy found by
    three tokens is likelier to hold than one found by a single token (a newline, a comma): pooled,
    an answer that copied priced the next answer's one-token coincidences, and a translation after
    one (prompt lookup made 9.7 tokens a round there) opened with three lookups at alpha_1 = 0.80,
    0.72, 0.64 that kept nothing (docs/bench-auto/round_trace_other_half.txt). The first round of a
    chat answer usually is such a case too: the prompt ends in the template's newline, whose latest
    earlier match is the one before the assistant's turn began."""

    name = "prompt-lookup"
    free = True
    SHORT_CASE = True  # the one-token match its own case (an A/B flag: docs/bench-auto/lookup_cases_ab.py)

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "PromptLookupDrafter":
        return cls()  # reads nothing: its n-gram lengths are its own defaults

    def __init__(self, max_ngram: int = MAX_NGRAM, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.reset()

    def reset(self) -> None:
        self._last: tuple[tuple[int, ...], tuple[int, int] | None] = ((), None)

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        """This round's one source: its short case where the latest match is of the last token alone."""
        found = self.latest(ids)
        short = self.SHORT_CASE and found is not None and found[1] < 2
        return (Source(self.name, case="short" if short else None),)

    def match(self, ids: list[int]) -> int | None:
        """Where the continuation of the latest earlier match of the last n-gram starts, or None."""
        found = self.latest(ids)
        return None if found is None else found[0]

    def latest(self, ids: list[int]) -> tuple[int, int] | None:
        """latest_match(ids) with this drafter's n-gram lengths: (where the continuation starts, n).
        Cached for the last ids: the hybrid drafter asks twice per round, and token recycling (which
        the mixed drafter hands this one) asks for its sources, its free draft and its proposal."""
        key = tuple(ids)
        if self._last[0] != key:
            self._last = (key, latest_match(ids, self.max_ngram, self.min_ngram))
        return self._last[1]

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        start = self.match(ids) if k > 0 else None
        return Draft([] if start is None else ids[start : start + k], None)


def latest_match(ids: list[int], max_ngram: int, min_ngram: int = 1) -> tuple[int, int] | None:
    """(where the continuation starts, n) for the latest earlier occurrence of the last n tokens,
    the longest n first; None when not even the last min_ngram tokens occurred before."""
    for n, starts in matches(ids, max_ngram, min_ngram):
        if starts:
            return starts[-1] + n, n
    return None


def matches(ids: list[int], max_ngram: int, min_ngram: int):
    """For n from max_ngram down to min_ngram: (n, where the last n tokens occurred earlier),
    earliest first. Only windows that start before the final n-gram count, so every match has a
    continuation."""
    seq = torch.tensor(ids)
    for n in range(min(max_ngram, len(ids) - 1), min_ngram - 1, -1):
        yield n, (seq[:-1].unfold(0, n, 1) == seq[-n:]).all(dim=1).nonzero().flatten().tolist()
