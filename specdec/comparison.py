"""Standard vs speculative decoding of one request, one lane after the other: the CLI's run and
its JSON, and `specdec.compare` for Python users. Reporting, not algorithm: the lanes and the
statistics come from the engine (Pair, engine/run_stats.py); this module times nothing itself."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .engine.events import RoundEvent
from .engine.pair import Pair, Request
from .engine.run_stats import RunStats, summarize
from .engine.stats import speedup_interval, undecided


@dataclass(frozen=True)
class LaneResult:
    """One lane's output: its tokens, their text, and the device seconds the engine timed."""

    token_ids: tuple[int, ...]
    text: str
    seconds: float

    @property
    def tokens_per_s(self) -> float | None:
        return len(self.token_ids) / self.seconds if self.seconds > 0 else None

    def to_json(self) -> dict:
        return {"token_ids": list(self.token_ids), "text": self.text, "seconds": self.seconds,
                "tokens_per_s": self.tokens_per_s}


@dataclass(frozen=True)
class Comparison:
    """Both lanes of one request, the speculative lane's rounds, and the statistics."""

    standard: LaneResult
    speculative: LaneResult
    rounds: tuple[RoundEvent, ...]
    stats: RunStats
    # A 90% bootstrap interval of stats.speedup (engine.stats.speedup_interval): how sure this one run
    # is of its own answer. None with fewer than 3 steps or rounds a lane.
    interval: tuple[float, float] | None = None

    @property
    def undecided(self) -> bool:
        """The interval holds 1.0: this run cannot tell whether speculation paid."""
        return undecided(self.interval)

    def to_json(self) -> dict:
        """{"standard", "speculative" (with its "rounds"), "stats", "speedup_interval", "undecided"}: the
        CLI's --json shape. undecided: the interval holds 1.0, so the verdict's "paid" or "did not
        pay" is this run's point estimate, not something it can tell (the text output says so too)."""
        return {"standard": self.standard.to_json(),
                "speculative": {**self.speculative.to_json(), "rounds": [asdict(r) for r in self.rounds]},
                "stats": self.stats.to_json(), "speedup_interval": list(self.interval) if self.interval else None,
                "undecided": self.undecided}


def run_comparison(pair: Pair, request: Request, warm_up: bool = True) -> Comparison:
    """Standard then speculative, one after the other (never overlapping); greedy lanes are then
    compared token for token (Pair.divergence)."""
    ids = pair.prompt_ids(request)
    if warm_up:
        pair.warm_up(request)
    standard = list(pair.standard(request, ids))
    rounds = tuple(pair.speculative(request, ids))
    std_ids = [e.token for e in standard]
    spec_ids = [t for r in rounds for t in r.tokens]
    stats = summarize(standard, list(rounds), request.spec.k, greedy=request.sampling.greedy)
    if request.sampling.greedy:
        stats = stats.compared_with(pair.divergence(ids, std_ids, spec_ids))
    pair.free()
    def lane(ids: list[int], seconds: float) -> LaneResult:
        return LaneResult(tuple(ids), pair.tokenizer.decode(ids, skip_special_tokens=True), seconds)

    interval = speedup_interval([e.seconds for e in standard], [(len(r.tokens), r.seconds) for r in rounds],
                                point=stats.speedup)
    return Comparison(lane(std_ids, sum(e.seconds for e in standard)),
                      lane(spec_ids, sum(r.seconds for r in rounds)), rounds, stats, interval)


def compare(pair: Pair, request: Request, warm_up: bool = True) -> dict:
    """run_comparison as plain JSON: {"standard", "speculative", "stats"}."""
    return run_comparison(pair, request, warm_up).to_json()
