"""Acceptance statistics and the alpha-geometric theory (Leviathan et al. 2023, section 3).

Model: each drafted token is accepted independently with probability alpha, so with gamma drafted
tokens the number accepted N is a geometric variable truncated at gamma:
    P(N = n) = alpha^n (1 - alpha)  for n < gamma,    P(N = gamma) = alpha^gamma.
A round adds N + 1 tokens, so E[tokens/round] = tau = (1 - alpha^(gamma+1)) / (1 - alpha), and with a
draft costing c target-steps per token, the expected speedup is tau / (gamma c + 1).
"""
from __future__ import annotations

import statistics
from typing import Sequence


def alpha_mle(drafted: Sequence[int], accepted: Sequence[int]) -> float | None:
    """Maximum-likelihood alpha of the truncated geometric model, rounds of any draft length.

    log L = (sum n) log alpha + R log(1 - alpha), R = rounds that ended in a rejection,
    so alpha_hat = sum n / (sum n + R). None when no token was drafted.
    """
    rounds = [(m, n) for m, n in zip(drafted, accepted) if m > 0]
    if not rounds:
        return None
    kept = sum(n for _, n in rounds)
    rejections = sum(1 for m, n in rounds if n < m)
    return kept / (kept + rejections) if kept + rejections else None


def alpha_naive(drafted: Sequence[int], accepted: Sequence[int]) -> float | None:
    """accepted / drafted. Biased low: positions after a rejection are never tested but count."""
    total = sum(drafted)
    return sum(accepted) / total if total else None


def alpha_analytic(per_position: Sequence[Sequence[float]]) -> float | None:
    """Mean over drafted positions of beta = sum_x min(p(x), q(x))."""
    values = [a for row in per_position for a in row]
    return statistics.fmean(values) if values else None


def tau(alpha: float, gamma: int) -> float:
    """Expected tokens per round, (1 - alpha^(gamma+1)) / (1 - alpha); gamma + 1 at alpha = 1."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def expected_tokens(alpha: float, drafted: Sequence[int]) -> float:
    """Expected tokens over rounds that drafted m_1, m_2, ... tokens: sum_r tau(alpha, m_r).

    Adaptive k, prompt lookup without a match (m = 0, one plain token), a confidence stop and the
    budget-clipped last rounds all draft fewer or more than the starting k, so each round counts
    with its own length."""
    return sum(tau(alpha, m) for m in drafted)


def predicted_speedup_rounds(alpha: float, drafted: Sequence[int], c: float, verify_cost: float = 1.0) -> float:
    """sum_r tau(alpha, m_r) / sum_r (m_r c + v_r), in target steps, where v_r is verify_cost for a
    round that drafted and 1 for one that did not (its target pass is an ordinary one-token step).
    Equals predicted_speedup(alpha, k, c, verify_cost) when every round drafts k."""
    steps = sum(m * c + (verify_cost if m else 1.0) for m in drafted)
    return expected_tokens(alpha, drafted) / steps if steps > 0 else 0.0


def accepted_pmf(alpha: float, gamma: int) -> list[float]:
    """P(N = n) for n = 0..gamma under the truncated geometric model."""
    return [alpha**n * (1.0 - alpha) for n in range(gamma)] + [alpha**gamma]


def predicted_speedup(alpha: float, gamma: int, c: float, verify_cost: float = 1.0) -> float:
    """tau / (gamma c + verify_cost). verify_cost = 1 is the paper's assumption that checking
    gamma + 1 tokens costs one target step; on a small CPU it does not, so callers can pass the
    measured ratio."""
    return tau(alpha, gamma) / (gamma * c + verify_cost)


def cost_ratio(draft_seconds: float, drafted_tokens: int, target_seconds_per_token: float) -> float | None:
    """c: seconds per drafted token over seconds per standard target step."""
    if drafted_tokens == 0 or target_seconds_per_token <= 0:
        return None
    return (draft_seconds / drafted_tokens) / target_seconds_per_token


def position_acceptance(drafted: Sequence[int], accepted: Sequence[int]) -> list[float | None]:
    """For each draft position i (1-based), P(position i accepted | positions before it were).

    The alpha-geometric model says every entry equals alpha; a falling curve shows it does not hold.
    """
    longest = max(drafted, default=0)
    rates: list[float | None] = []
    for i in range(1, longest + 1):
        tested = sum(1 for m, n in zip(drafted, accepted) if m >= i and n >= i - 1)
        kept = sum(1 for n in accepted if n >= i)
        rates.append(kept / tested if tested else None)
    return rates


def median_step_seconds(seconds: Sequence[float]) -> float:
    """Median time of a decode step, leaving out the first (which carries the prefill)."""
    steps = list(seconds[1:]) or list(seconds)
    return statistics.median(steps) if steps else 0.0


def undecided(interval: tuple[float, float] | None) -> bool:
    """A speedup interval that holds 1.0: the run cannot tell whether speculation paid."""
    return interval is not None and interval[0] <= 1.0 <= interval[1]


def speedup_interval(standard_seconds: Sequence[float], rounds: Sequence[tuple[int, float]], level: float = 0.9,
                     draws: int = 1000, seed: int = 0, point: float | None = None,
                     skip_first: bool = True) -> tuple[float, float] | None:
    """A bootstrap interval for the measured speedup: how sure one run is of its own answer.

    The speedup is (speculative tokens / speculative seconds) / (standard tokens / standard seconds).
    Each lane is a sample of independent units of work: the standard lane's steps (one token each)
    and the speculative lane's rounds (tokens, seconds). Resampling each with replacement, `draws`
    times with a fixed seed, gives the run's sampling distribution of the ratio r* around the
    sample's own ratio r; the interval is its central `level` share. It captures what one run's
    noise can do (a busy moment, a lucky stretch of text); it cannot see a machine that was slow
    throughout. The first unit of each lane carries the prefill and is left out, as the cost ratio
    leaves it out (skip_first=False: the caller has left out each run's first units already, as
    for several runs pooled). None with fewer than 3 units a lane.

    `point` is the speedup the caller reports, which may count the prefill that the resampling
    leaves out. The interval is then the same relative spread around it, point × [r*_lo / r,
    r*_hi / r], widened to hold the point itself: an interval printed beside a number that it does
    not contain would contradict itself (it can happen only when r sits in a tail of its own
    resampling distribution, with a handful of very uneven rounds)."""
    import torch

    first = 1 if skip_first else 0
    steps, spec = list(standard_seconds[first:]), list(rounds[first:])
    if len(steps) < 3 or len(spec) < 3:
        return None
    generator = torch.Generator().manual_seed(seed)
    std = torch.tensor(steps, dtype=torch.float64)
    tokens = torch.tensor([t for t, _ in spec], dtype=torch.float64)
    seconds = torch.tensor([s for _, s in spec], dtype=torch.float64)
    pick_std = torch.randint(len(steps), (draws, len(steps)), generator=generator)
    pick_spec = torch.randint(len(spec), (draws, len(spec)), generator=generator)
    std_rate = len(steps) / std[pick_std].sum(1)
    spec_rate = tokens[pick_spec].sum(1) / seconds[pick_spec].sum(1)
    ratios = (spec_rate / std_rate).sort().values
    tail = (1 - level) / 2
    low, high = float(ratios[int(tail * (draws - 1))]), float(ratios[int((1 - tail) * (draws - 1))])
    if point is None:
        return low, high
    sample = float((tokens.sum() / seconds.sum()) / (len(steps) / std.sum()))
    return min(point, point * low / sample), max(point, point * high / sample)
