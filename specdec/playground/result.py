"""What the playground reports for one race: the engine's RunStats, the setup that ran and, once it
has finished, the verdict's interval and the serving flags. Typed here; `to_json` is the
`/compare` endpoint's stats object (the engine's "stats" keys plus these), and `from_json` reads
it back where the browser hands it to a later event (the result card, the verify-cost chart)."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..engine.run_stats import RunStats
from ..engine.verify_costs import VerifyCosts
from ..serving import Serving


@dataclass(frozen=True)
class LaneTotals:
    """One lane so far: its text, how many tokens, and the device seconds they took."""

    text: str
    tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float | None:
        return self.tokens / self.seconds if self.seconds > 0 else None

    def to_json(self) -> dict:
        return {"text": self.text, "tokens": self.tokens, "seconds": self.seconds, "tokens_per_s": self.tokens_per_s}

    @classmethod
    def from_json(cls, data: dict) -> LaneTotals:
        return cls(data["text"], data["tokens"], data["seconds"])


@dataclass(frozen=True)
class RaceResult:
    """One race (or the last of its repeats): the run's statistics and the setup that produced them.

    While the race runs, `finished` is False and the verdict's parts (interval, busy, serving,
    trees) are None: figures that still move get no verdict."""

    run: RunStats
    standard: LaneTotals
    speculative: LaneTotals
    drafted: tuple[int, ...]  # per round: tokens drafted, and how many of them the target kept
    accepted: tuple[int, ...]
    greedy: bool
    target: str
    draft: str | None
    drafter: str
    draft_layers: tuple[int, ...] | None
    policy: str
    tree_shape: dict | None  # {"budget", "branching"} for the tree drafters
    device: str
    dtype: str
    engine: str
    verify_costs: VerifyCosts | None  # the device's table, measured at warm-up
    verify_points: tuple[tuple[int, float], ...]  # this run's verify passes: (width, seconds)
    finished: bool = False
    repeats: int = 1
    interval: tuple[float, float] | None = None  # 90% interval of the speedup
    busy: bool | None = None
    serving: Serving | None = None
    trees: list | None = None  # tree rounds as tree_view.tree_json made them (plain JSON already)

    def finish(self, runs: list[RunStats], interval, busy: bool | None, serving: Serving, trees) -> RaceResult:
        """The finished race's verdict: the median over the request's runs, its interval, how to serve it."""
        return replace(self, run=self.run.median_of(runs), finished=True, repeats=len(runs),
                       interval=tuple(interval) if interval else None, busy=busy, serving=serving, trees=trees)

    def to_json(self) -> dict:
        out = self.run.to_json()
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "run":
                out[f.name] = value.to_json() if hasattr(value, "to_json") else value
        out.update(drafted=list(self.drafted), accepted=list(self.accepted), round_k=out["k_per_round"],
                   draft_layers=list(self.draft_layers) if self.draft_layers is not None else None,
                   verify_points=[list(p) for p in self.verify_points], final=self.finished,
                   interval=list(self.interval) if self.interval else None)
        return out

    @classmethod
    def read(cls, data: dict | None) -> RaceResult | None:
        """from_json where data is a full result; None for nothing or a light frame (lanes only)."""
        return cls.from_json(data) if data and "verdict" in data else None

    @classmethod
    def from_json(cls, data: dict) -> RaceResult:
        """The result back from its JSON; keys it does not know are ignored."""
        own = {f.name for f in fields(cls)} & data.keys()
        values = {name: data[name] for name in own}
        maybe = lambda key, read: read(data[key]) if data.get(key) is not None else None  # noqa: E731
        values.update(
            run=RunStats.from_json(data), standard=LaneTotals.from_json(data["standard"]),
            speculative=LaneTotals.from_json(data["speculative"]), drafted=tuple(data.get("drafted") or ()),
            accepted=tuple(data.get("accepted") or ()), draft_layers=maybe("draft_layers", tuple),
            verify_costs=maybe("verify_costs", VerifyCosts.from_json),
            verify_points=tuple(tuple(p) for p in data.get("verify_points") or ()),
            interval=maybe("interval", tuple), serving=maybe("serving", Serving.from_json))
        return cls(**values)
