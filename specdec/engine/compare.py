"""Standard vs speculative decoding of one request, one lane after the other, reduced to the
statistics the CLI prints and the app and the benchmarks share."""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict

from .events import RoundEvent, TokenEvent
from .pair import Pair, Request
from .stats import alpha_analytic, alpha_mle, alpha_naive, cost_ratio, expected_tokens, median_step_seconds, \
    position_acceptance, predicted_speedup_rounds


def lane_summary(tokenizer, token_ids: list[int], seconds: float) -> dict:
    return {
        "token_ids": token_ids,
        "text": tokenizer.decode(token_ids, skip_special_tokens=True),
        "seconds": seconds,
        "tokens_per_s": len(token_ids) / seconds if seconds > 0 else None,
    }


def summarize(standard: list[TokenEvent], rounds: list[RoundEvent], k: int, greedy: bool = True) -> dict:
    """The comparison's statistics; every value is plain JSON (None where undefined).

    Predictions use each round's own draft length (see stats.expected_tokens), so they hold for
    adaptive k, prompt lookup and confidence stops too. `identical` is reported for greedy runs
    only: sampled lanes draw their random numbers differently, so their texts differ by design.
    """
    drafted = [r.tested_length for r in rounds]  # a tree's path that ended at a leaf is no rejection
    accepted = [r.accepted for r in rounds]
    spec_ids = [t for r in rounds for t in r.tokens]
    std_seconds = sum(e.seconds for e in standard)
    spec_seconds = sum(r.seconds for r in rounds)
    step = median_step_seconds([e.seconds for e in standard])
    alpha = alpha_mle(drafted, accepted)
    # Costs are steady-state, like the standard step: round 0 carries both models' prefill.
    steady = rounds[1:] or rounds
    c = cost_ratio(sum(r.draft_seconds for r in steady), sum(r.draft_length for r in steady), step)
    # Verify cost: a target pass over a round's drafts plus one token, in units of one standard step.
    verifies = [r.verify_seconds for r in steady if r.drafted]
    verify_cost = statistics.fmean(verifies) / step if verifies and step > 0 else None
    std_rate = len(standard) / std_seconds if std_seconds > 0 else None
    spec_rate = len(spec_ids) / spec_seconds if spec_seconds > 0 else None
    predict = (lambda v: predicted_speedup_rounds(alpha, drafted, c or 0.0, v)) if alpha is not None else None
    stats = {
        "alpha": alpha,
        "alpha_naive": alpha_naive(drafted, accepted),
        "alpha_analytic": alpha_analytic([r.alpha for r in rounds]),
        "tau": expected_tokens(alpha, drafted) / len(rounds) if alpha is not None else None,
        "tokens_per_round": len(spec_ids) / len(rounds) if rounds else None,
        "k": k,
        "rounds": len(rounds),
        "rounds_without_draft": drafted.count(0),
        "c": c,
        "verify_cost": verify_cost,
        "speedup": spec_rate / std_rate if std_rate and spec_rate else None,
        "predicted_speedup": predict(1.0) if predict else None,
        "predicted_speedup_with_verify_cost": predict(verify_cost) if predict and verify_cost else None,
        "position_acceptance": position_acceptance(drafted, accepted),
        "k_per_round": [r.k for r in rounds],
        "k_settled": settled_k(rounds),
        "sources": dict(Counter(r.source for r in rounds if r.source)),
        "tree": tree_summary(rounds),
    }
    stats["verdict"] = verdict(stats)
    if greedy:
        stats["identical"] = [e.token for e in standard] == spec_ids
    return stats


def tree_summary(rounds: list[RoundEvent]) -> dict | None:
    """Tree rounds' shape and yield: nodes verified, depth, and tokens per target pass."""
    trees = [r for r in rounds if r.tree is not None]
    if not trees:
        return None
    mean = lambda values: statistics.fmean(values)  # noqa: E731
    return {
        "rounds": len(trees),
        "nodes_per_round": mean([len(r.tree.tokens) for r in trees]),
        "depth_per_round": mean([r.tree.depth for r in trees]),
        "accepted_per_round": mean([r.accepted for r in trees]),
        "tokens_per_pass": mean([len(r.tokens) for r in trees]),
    }


def settled_k(rounds: list[RoundEvent]) -> float | None:
    """The median k of the run's second half: where a policy settled once it had measured."""
    ks = [r.k for r in rounds[len(rounds) // 2:]]
    return statistics.median(ks) if ks else None


def verdict_answer(speedup: float | None) -> str:
    """The verdict's answer alone: did speculation pay (the table's short cell)."""
    if speedup is None:
        return "not measured yet"
    return "speculation paid" if speedup > 1.0 else "speculation did not pay"


def verdict(stats: dict) -> str:
    """One line: did speculation pay, and the measured numbers that say why."""
    if stats["speedup"] is None:
        return verdict_answer(None)
    fmt = lambda x, spec: "n/a" if x is None else format(x, spec)  # noqa: E731
    why = (f"α {fmt(stats['alpha'], '.2f')}, c {fmt(stats['c'], '.2f')}, verify cost "
           f"{fmt(stats['verify_cost'], '.2f')} steps, settled on k={fmt(stats['k_settled'], 'g')}, "
           f"{stats['rounds_without_draft']} of {stats['rounds']} rounds plain")
    return f"{verdict_answer(stats['speedup'])}: {stats['speedup']:.2f}x standard decoding ({why})"


def compare(pair: Pair, request: Request, warm_up: bool = True) -> dict:
    """Standard then speculative, one after the other (never overlapping), as the CLI's JSON."""
    ids = pair.prompt_ids(request)
    if warm_up:
        pair.warm_up(request)
    standard = list(pair.standard(request, ids))
    rounds = list(pair.speculative(request, ids))
    std_ids = [e.token for e in standard]
    spec_ids = [t for r in rounds for t in r.tokens]
    stats = summarize(standard, rounds, request.spec.k, greedy=request.sampling.greedy)
    if request.sampling.greedy:
        stats["divergence"] = pair.divergence(ids, std_ids, spec_ids)
    pair.free()
    return {
        "standard": lane_summary(pair.tokenizer, std_ids, sum(e.seconds for e in standard)),
        "speculative": {
            **lane_summary(pair.tokenizer, spec_ids, sum(r.seconds for r in rounds)),
            "rounds": [asdict(r) for r in rounds],
        },
        "stats": stats,
    }
