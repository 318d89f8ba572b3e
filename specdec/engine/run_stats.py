"""One run's statistics, typed: what standard and speculative decoding of one request measured.

`summarize` reduces the two lanes' events to a frozen `RunStats`, on the model of vLLM's
`SpecDecodingStats`: the CLI, the app's table and charts and the benchmark read its attributes,
and `to_json` is the one place it becomes the JSON the CLI prints and `/compare` returns.

The numbers (engine/stats.py proves the formulas):
- α̂ is the truncated-geometric MLE over rounds: round r drafted m_r tokens and kept a_r, so
  α̂ = Σ a_r / (Σ a_r + #{r : a_r < m_r}) (a round that kept all m_r drafts says nothing about the next).
- τ is the mean over rounds of E[tokens | α̂, m_r] = (1 − α̂^(m_r+1)) / (1 − α̂): each round counts with
  its own draft length, so the prediction holds for adaptive k, prompt lookup and confidence stops.
- c (draft cost) and v (verify cost) are in units of one standard step, and steady-state: round 0
  carries both models' prefill, so it is left out, as the standard lane's median step leaves out its own.
  Where no later round drafted (a policy that drafted once, then chose plain steps), c is round 0's,
  prefill and all: an upper bound, never the c = 0 of a free draft.
- The predicted speedup is Σ_r τ(α̂, m_r) / Σ_r (m_r·c + v) with v = 1 (Leviathan et al. eq. 1) and with
  v as measured.
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, fields, replace

from .events import RoundEvent, TokenEvent
from .stats import alpha_analytic, alpha_mle, alpha_naive, cost_ratio, expected_tokens, median_step_seconds, \
    position_acceptance, predicted_speedup_rounds
from .verdicts import Divergence


MIN_VERDICT_ROUNDS = 3  # fewer, and a run's speedup is one pass's timing (an answer of one token, EOS first)


def verdict_answer(speedup: float | None) -> str:
    """The verdict's answer alone: did speculation pay (the table's short cell)."""
    if speedup is None:
        return "not measured yet"
    return "speculation paid" if speedup > 1.0 else "speculation did not pay"


@dataclass(frozen=True)
class Verdict:
    """Did speculation pay, and the measured numbers that say why: the JSON's "verdict" line."""

    speedup: float | None
    alpha: float | None
    c: float | None
    verify_cost: float | None
    k_settled: float | None
    rounds_plain: int
    rounds: int
    runs: int = 1  # > 1: speedup is the median of this many runs of the same request

    @property
    def answer(self) -> str:
        if self.speedup is not None and self.rounds < MIN_VERDICT_ROUNDS:  # one round's timing is noise
            return f"too short to tell whether speculation paid ({self.rounds} round{'s' * (self.rounds != 1)})"
        return verdict_answer(self.speedup)

    def __str__(self) -> str:
        if self.speedup is None:
            return self.answer
        fmt = lambda x, spec: "n/a" if x is None else format(x, spec)  # noqa: E731
        why = (f"α {fmt(self.alpha, '.2f')}, c {fmt(self.c, '.2f')}, verify cost {fmt(self.verify_cost, '.2f')} "
               f"steps, settled on k={fmt(self.k_settled, 'g')}, {self.rounds_plain} of {self.rounds} rounds plain")
        median = f"; the median of {self.runs} runs" if self.runs > 1 else ""
        return f"{self.answer}: {self.speedup:.2f}x standard decoding ({why}){median}"


@dataclass(frozen=True)
class TreeYield:
    """Tree rounds' mean shape and yield: nodes verified, depth, and tokens per target pass."""

    rounds: int
    nodes_per_round: float
    depth_per_round: float
    accepted_per_round: float
    tokens_per_pass: float

    @classmethod
    def of(cls, rounds: list[RoundEvent]) -> TreeYield | None:
        trees = [r for r in rounds if r.tree is not None]
        if not trees:
            return None
        mean = statistics.fmean
        return cls(len(trees), mean([len(r.tree.tokens) for r in trees]), mean([r.tree.depth for r in trees]),
                   mean([r.accepted for r in trees]), mean([len(r.tokens) for r in trees]))


@dataclass(frozen=True)
class RunStats:
    """The comparison's statistics (None where undefined: no draft, no step timed yet).

    `identical` and `divergence` are for greedy runs only: sampled lanes draw their random numbers
    differently, so their texts differ by design. `divergence` is looked for once both lanes have
    finished (`compared`), and is None when they agree.
    """

    alpha: float | None
    alpha_naive: float | None
    alpha_analytic: float | None
    tau: float | None
    tokens_per_round: float | None
    k: int
    rounds: int
    rounds_without_draft: int
    c: float | None
    verify_cost: float | None
    speedup: float | None
    predicted_speedup: float | None
    predicted_speedup_with_verify_cost: float | None
    position_acceptance: tuple[float | None, ...]
    k_per_round: tuple[int, ...]
    k_settled: float | None
    sources: dict[str, int]  # rounds per draft source, in the order they first drafted
    tree: TreeYield | None
    identical: bool | None = None
    compared: bool = False
    divergence: Divergence | None = None
    speedup_runs: tuple[float, ...] | None = None  # each run's own speedup, when speedup is their median

    @property
    def verdict(self) -> Verdict:
        runs = len(self.speedup_runs) if self.speedup_runs else 1
        return Verdict(self.speedup, self.alpha, self.c, self.verify_cost, self.k_settled,
                       self.rounds_without_draft, self.rounds, runs)

    def compared_with(self, divergence: Divergence | None) -> RunStats:
        """These stats once the finished greedy lanes were compared (divergence None: they agree)."""
        return replace(self, compared=True, divergence=divergence)

    def median_of(self, runs: list[RunStats]) -> RunStats:
        """These stats with the speedup replaced by the median over runs of the same request (this one
        among them); kept as is when a run has no speedup."""
        speedups = tuple(r.speedup for r in runs)
        if len(runs) < 2 or None in speedups:
            return self
        return replace(self, speedup=statistics.median(speedups), speedup_runs=speedups)

    def to_json(self) -> dict:
        """The JSON's "stats" object: plain values only; "identical" for greedy runs, "divergence" once
        compared."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("identical", "compared", "divergence", "tree")}
        out.update(position_acceptance=list(self.position_acceptance), k_per_round=list(self.k_per_round),
                   sources=dict(self.sources), tree=asdict(self.tree) if self.tree else None,
                   speedup_runs=list(self.speedup_runs) if self.speedup_runs else None, verdict=str(self.verdict))
        if self.identical is not None:
            out["identical"] = self.identical
        if self.compared:
            out["divergence"] = self.divergence.to_json() if self.divergence else None
        return out

    @classmethod
    def from_json(cls, data: dict) -> RunStats:
        """The typed stats back from their JSON (what a browser sends back); other keys are ignored."""
        own = {f.name for f in fields(cls)} & data.keys()
        values = {name: data[name] for name in own}
        divergence = data.get("divergence")
        values.update(
            position_acceptance=tuple(data.get("position_acceptance") or ()),
            k_per_round=tuple(data.get("k_per_round") or ()), sources=dict(data.get("sources") or {}),
            tree=TreeYield(**data["tree"]) if data.get("tree") else None,
            speedup_runs=tuple(data["speedup_runs"]) if data.get("speedup_runs") else None,
            compared="divergence" in data, divergence=Divergence.from_json(divergence) if divergence else None)
        return cls(**values)


def summarize(standard: list[TokenEvent], rounds: list[RoundEvent], k: int, greedy: bool = True) -> RunStats:
    """The two lanes' events (so far) reduced to their statistics (see the module docstring)."""
    drafted = [r.tested_length for r in rounds]  # a tree's path that ended at a leaf is no rejection
    accepted = [r.accepted for r in rounds]
    spec_ids = [t for r in rounds for t in r.tokens]
    std_seconds = sum(e.seconds for e in standard)
    spec_seconds = sum(r.seconds for r in rounds)
    step = median_step_seconds([e.seconds for e in standard])
    alpha = alpha_mle(drafted, accepted)
    steady = rounds[1:] or rounds  # round 0 carries both models' prefill
    c = draft_cost(steady, step)
    if c is None:  # no round after the first drafted: round 0's c, prefill and all (an upper bound)
        c = draft_cost(rounds, step)
    # Verify cost: a target pass over a round's drafts plus one token, in units of one standard step.
    verifies = [r.verify_seconds for r in steady if r.drafted]
    verify_cost = statistics.fmean(verifies) / step if verifies and step > 0 else None
    std_rate = len(standard) / std_seconds if std_seconds > 0 else None
    spec_rate = len(spec_ids) / spec_seconds if spec_seconds > 0 else None
    # c is None only where no round drafted (then no m_r * c term counts) or nothing timed the standard lane.
    predict = None
    if alpha is not None and c is not None:
        predict = lambda v: predicted_speedup_rounds(alpha, drafted, c, v)  # noqa: E731
    return RunStats(
        alpha=alpha, alpha_naive=alpha_naive(drafted, accepted), alpha_analytic=alpha_analytic([r.alpha for r in rounds]),
        tau=expected_tokens(alpha, drafted) / len(rounds) if alpha is not None else None,
        tokens_per_round=len(spec_ids) / len(rounds) if rounds else None,
        k=k, rounds=len(rounds), rounds_without_draft=rounds_without_draft(rounds), c=c, verify_cost=verify_cost,
        speedup=spec_rate / std_rate if std_rate and spec_rate else None,
        predicted_speedup=predict(1.0) if predict else None,
        predicted_speedup_with_verify_cost=predict(verify_cost) if predict and verify_cost else None,
        position_acceptance=tuple(position_acceptance(drafted, accepted)),
        k_per_round=tuple(r.k for r in rounds), k_settled=settled_k(rounds),
        sources={str(s): n for s, n in Counter(r.source for r in rounds if r.source).items()},
        tree=TreeYield.of(rounds),
        identical=[e.token for e in standard] == spec_ids if greedy else None,
    )


def draft_cost(rounds: list[RoundEvent], step: float) -> float | None:
    """c over these rounds: seconds per drafted token over the standard lane's step (None: none drafted)."""
    return cost_ratio(sum(r.draft_seconds for r in rounds), sum(r.draft_length for r in rounds), step)


def settled_k(rounds: list[RoundEvent]) -> float | None:
    """The median k of the run's second half: where a policy settled once it had measured. Rounds
    whose k the answer's remaining room cut (its last ones) say nothing of the policy and are left
    out, unless there is nothing else: a fixed k = 4 over 12 tokens drafts 4, 4 and 1, and settled on 4."""
    chosen = [r for r in rounds if not r.budget_cut] or rounds
    ks = [r.k for r in chosen[len(chosen) // 2:]]
    return statistics.median(ks) if ks else None


def rounds_without_draft(rounds: list[RoundEvent]) -> int:
    """Rounds that drafted nothing though the answer had room for a draft: the policy chose plain
    decoding, or the drafter had nothing (a round with one token left to write drafts nothing under
    any policy, and is not counted)."""
    return sum(1 for r in rounds if not r.drafted and not (r.budget_cut and r.k == 0))
