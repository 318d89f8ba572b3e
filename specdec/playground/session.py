"""Standard and speculative decoding of one request, interleaved step by step: the live race.

Each engine generator times only its own device work, so stepping them in turns (and rendering
between steps) never puts one lane's time, or the UI's, on the other's clock. The lanes never
overlap: a step runs alone under DEVICE_LOCK.

Turn rule: the lane whose own clock is behind takes the next step (one token for standard, one
round for speculative). At every moment both lanes have then used about the same device time, so
the screen shows what two identical devices racing side by side would show.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator

from ..engine.pair import Pair, Request
from ..engine.run_stats import RunStats, summarize
from ..engine.verdicts import Divergence
from ..engine.events import RoundEvent, TokenEvent
from .result import LaneTotals
from .store import DEVICE_LOCK
from .tree_view import tree_json
from ..engine.text import Detokenizer

STANDARD, SPECULATIVE = "standard", "speculative"


@dataclass
class Lane:
    """What one lane has produced so far: text pieces with their fates, token count, device time."""

    pieces: list[tuple[str, str]] = field(default_factory=list)  # (text, fate); fate "" on the standard lane
    token_ids: list[int] = field(default_factory=list)
    seconds: float = 0.0
    finished: bool = False

    @property
    def tokens_per_s(self) -> float | None:
        return len(self.token_ids) / self.seconds if self.seconds > 0 else None

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.pieces)

    def summary(self) -> LaneTotals:
        return LaneTotals(self.text, len(self.token_ids), self.seconds)


@dataclass(frozen=True)
class Step:
    """One step of the race, for replay: which lane, its clock after the step, what it added."""

    lane: str
    at: float
    pieces: tuple[tuple[str, str], ...]
    finished: bool = False  # the lane's last step: a replay of a stopped run says stopped, not done


class Race:
    def __init__(self, pair: Pair, request: Request, prompt_ids: list[int]):
        self.request = request
        self._pair, self._prompt_ids = pair, prompt_ids  # for the divergence check once finished
        self.standard, self.speculative = Lane(), Lane()
        self.token_events: list[TokenEvent] = []
        self.rounds: list[RoundEvent] = []
        self.steps: list[Step] = []
        self.trees: list[dict] = []  # tree rounds as plain JSON (tree_view.tree_json), built once each
        self._tokenizer = pair.tokenizer
        self._detok = {STANDARD: Detokenizer(pair.tokenizer), SPECULATIVE: Detokenizer(pair.tokenizer)}
        self._standard = pair.standard(request, prompt_ids)
        self._speculative = pair.speculative(request, prompt_ids)

    @property
    def finished(self) -> bool:
        return self.standard.finished and self.speculative.finished

    def next_lane(self) -> str:
        if self.standard.finished:
            return SPECULATIVE
        if self.speculative.finished:
            return STANDARD
        return STANDARD if self.standard.seconds <= self.speculative.seconds else SPECULATIVE

    def step(self) -> str:
        """Advance the lane that is behind by one step; returns its name."""
        lane = self.next_lane()
        with DEVICE_LOCK:
            if lane == STANDARD:
                self._add_token(next(self._standard))
            else:
                self._add_round(next(self._speculative))
        return lane

    def __iter__(self) -> Iterator[str]:
        while not self.finished:
            yield self.step()

    def _add_token(self, event: TokenEvent) -> None:
        self.token_events.append(event)
        piece = (self._detok[STANDARD].add(event.token), "")
        self._extend(self.standard, STANDARD, [event.token], [piece], event.seconds, event.finished)

    def _add_round(self, event: RoundEvent) -> None:
        self.rounds.append(event)
        if event.tree is not None:  # its root is the last token committed before this round
            root = (self.speculative.token_ids or self._prompt_ids)[-1]
            self.trees.append(tree_json(event, self._tokenizer, root))
        detok = self._detok[SPECULATIVE]
        pieces = [(detok.add(t), fate) for t, fate in zip(event.tokens, event.fates)]
        self._extend(self.speculative, SPECULATIVE, list(event.tokens), pieces, event.seconds, event.finished)

    def _extend(self, lane: Lane, name: str, ids: list[int], pieces: list, seconds: float, finished: bool) -> None:
        lane.token_ids += ids
        lane.pieces += pieces
        lane.seconds += seconds
        lane.finished = finished
        self.steps.append(Step(name, lane.seconds, tuple(pieces), finished))

    def stats(self) -> RunStats:
        """The race's statistics so far; a finished greedy race's lanes compared token for token."""
        greedy = self.request.sampling.greedy
        stats = summarize(self.token_events, self.rounds, self.request.spec.k, greedy)
        return stats.compared_with(self.divergence) if greedy and self.finished else stats

    @cached_property
    def divergence(self) -> Divergence | None:
        """Where the finished greedy lanes first differ, and whether a numerical tie explains it
        (None when they agree). It may run the target once, so it runs alone and only once."""
        with DEVICE_LOCK:
            return self._pair.divergence(self._prompt_ids, self.standard.token_ids, self.speculative.token_ids)


def replay_frames(steps: list[Step], fps: float = 15.0, max_seconds: float = 30.0) -> Iterator[tuple[float, int, int]]:
    """(wall time to show it, standard steps shown, speculative steps shown), at the measured pace.

    A step appears when its lane's clock reaches it; a race longer than max_seconds is sped up
    uniformly, which keeps the lanes' relative pace. The last frame shows everything.
    """
    if not steps:
        return
    speed = replay_speed(steps, max_seconds)
    ordered = sorted(range(len(steps)), key=lambda i: (steps[i].at, i))
    shown = {STANDARD: 0, SPECULATIVE: 0}
    last = None
    for n, i in enumerate(ordered):
        shown[steps[i].lane] += 1
        wall = steps[i].at / speed
        following = steps[ordered[n + 1]].at / speed if n + 1 < len(ordered) else None
        # Steps closer together than one frame are shown together.
        if following is None or last is None or following - last >= 1.0 / fps:
            yield wall, shown[STANDARD], shown[SPECULATIVE]
            last = wall


def replay_speed(steps: list[Step], max_seconds: float = 30.0) -> float:
    total = max((s.at for s in steps), default=0.0)
    return max(1.0, total / max_seconds) if total > 0 else 1.0


def lane_pieces(steps: list[Step], lane: str, count: int) -> list[tuple[str, str]]:
    """The pieces of a lane's first count steps."""
    own = [s for s in steps if s.lane == lane][:count]
    return [piece for s in own for piece in s.pieces]
