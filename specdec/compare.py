"""Standard vs speculative decoding of one request on one target: the piece the CLI, the app and
the benchmarks share."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import Iterator

from .config import Sampling, Speculation
from .decoding import speculative_decode, standard_decode
from .drafters import make_drafter
from .events import RoundEvent, TokenEvent
from .kvcache import CachedModel
from .loading import Loaded, check_tokenizers
from .stats import alpha_analytic, alpha_mle, alpha_naive, cost_ratio, median_step_seconds, \
    position_acceptance, predicted_speedup, tau
from .text import encode_prompt


@dataclass(frozen=True)
class Request:
    prompt: str
    max_new_tokens: int = 128
    sampling: Sampling = field(default_factory=Sampling)
    spec: Speculation = field(default_factory=Speculation)
    drafter: str = "draft-model"
    raw: bool = False


class Pair:
    """A target, an optional draft model, and one KV cache per lane so the lanes never share state."""

    def __init__(self, target: Loaded, draft: Loaded | None = None):
        if draft is not None:
            check_tokenizers(target.tokenizer, draft.tokenizer)
        self.target, self.draft = target, draft
        self.tokenizer = target.tokenizer
        self.eos_ids = target.eos_ids
        self._standard_lane = CachedModel(target.model)
        self._speculative_lane = CachedModel(target.model)

    def prompt_ids(self, request: Request) -> list[int]:
        ids = encode_prompt(self.tokenizer, request.prompt, raw=request.raw)
        if not ids:
            raise ValueError("the prompt is empty")
        self.check_context(len(ids), request)
        return ids

    def check_context(self, prompt_tokens: int, request: Request) -> None:
        """The verify pass may run k positions past the last kept token, so that is budgeted too."""
        models = [self.target] + ([self.draft] if self.draft else [])
        context = min(getattr(m.model.config, "max_position_embeddings", None) or 10**9 for m in models)
        needed = prompt_tokens + request.max_new_tokens + request.spec.k_max
        if needed > context:
            raise ValueError(f"prompt ({prompt_tokens} tokens) + max_new_tokens ({request.max_new_tokens}) + "
                             f"k_max ({request.spec.k_max}) exceeds the model's context of {context} tokens")

    def standard(self, request: Request, prompt_ids: list[int] | None = None) -> Iterator[TokenEvent]:
        ids = prompt_ids if prompt_ids is not None else self.prompt_ids(request)
        return standard_decode(self._standard_lane, ids, request.sampling, request.max_new_tokens, self.eos_ids)

    def speculative(self, request: Request, prompt_ids: list[int] | None = None) -> Iterator[RoundEvent]:
        ids = prompt_ids if prompt_ids is not None else self.prompt_ids(request)
        drafter = make_drafter(request.drafter, self.draft.model if self.draft else None,
                               self._speculative_lane.vocab_size, request.spec.confidence)
        return speculative_decode(self._speculative_lane, drafter, ids, request.spec, request.sampling,
                                  request.max_new_tokens, self.eos_ids)

    def free(self) -> None:
        """Drop both lanes' KV caches (the draft's lives in its drafter and goes with it)."""
        self._standard_lane.reset()
        self._speculative_lane.reset()

    def warm_up(self, request: Request, tokens: int = 4) -> None:
        """Run both lanes briefly so one-time costs (allocator, kernels, lazy init) are not timed."""
        short = replace(request, max_new_tokens=min(tokens, request.max_new_tokens))
        for _ in self.standard(short):
            pass
        for _ in self.speculative(short):
            pass


def lane_summary(tokenizer, token_ids: list[int], seconds: float) -> dict:
    return {
        "token_ids": token_ids,
        "text": tokenizer.decode(token_ids, skip_special_tokens=True),
        "seconds": seconds,
        "tokens_per_s": len(token_ids) / seconds if seconds > 0 else None,
    }


def summarize(standard: list[TokenEvent], rounds: list[RoundEvent], k: int) -> dict:
    """The comparison's statistics; every value is plain JSON (None where undefined)."""
    drafted = [len(r.drafted) for r in rounds]
    accepted = [r.accepted for r in rounds]
    std_ids = [e.token for e in standard]
    spec_ids = [t for r in rounds for t in r.tokens]
    std_seconds = sum(e.seconds for e in standard)
    spec_seconds = sum(r.seconds for r in rounds)
    step = median_step_seconds([e.seconds for e in standard])
    alpha = alpha_mle(drafted, accepted)
    # Costs are steady-state, like the standard step: round 0 carries both models' prefill.
    steady = rounds[1:] or rounds
    c = cost_ratio(sum(r.draft_seconds for r in steady), sum(len(r.drafted) for r in steady), step)
    # Verify cost: a round's target pass over k + 1 tokens in units of one standard step.
    verify_cost = statistics.fmean(r.verify_seconds for r in steady) / step if steady and step > 0 else None
    std_rate = len(std_ids) / std_seconds if std_seconds > 0 else None
    spec_rate = len(spec_ids) / spec_seconds if spec_seconds > 0 else None
    predicted = predicted_speedup(alpha, k, c or 0.0) if alpha is not None else None
    return {
        "alpha": alpha,
        "alpha_naive": alpha_naive(drafted, accepted),
        "alpha_analytic": alpha_analytic([r.alpha for r in rounds]),
        "tau": tau(alpha, k) if alpha is not None else None,
        "tokens_per_round": len(spec_ids) / len(rounds) if rounds else None,
        "k": k,
        "rounds": len(rounds),
        "c": c,
        "verify_cost": verify_cost,
        "speedup": spec_rate / std_rate if std_rate and spec_rate else None,
        "predicted_speedup": predicted,
        "predicted_speedup_with_verify_cost": (
            predicted_speedup(alpha, k, c or 0.0, verify_cost) if alpha is not None and verify_cost else None),
        "position_acceptance": position_acceptance(drafted, accepted),
        "identical": std_ids == spec_ids,
    }


def compare(pair: Pair, request: Request, warm_up: bool = True) -> dict:
    """Standard then speculative, one after the other (never overlapping), as the CLI's JSON."""
    ids = pair.prompt_ids(request)
    if warm_up:
        pair.warm_up(request)
    standard = list(pair.standard(request, ids))
    rounds = list(pair.speculative(request, ids))
    pair.free()
    std_ids = [e.token for e in standard]
    spec_ids = [t for r in rounds for t in r.tokens]
    return {
        "standard": lane_summary(pair.tokenizer, std_ids, sum(e.seconds for e in standard)),
        "speculative": {
            **lane_summary(pair.tokenizer, spec_ids, sum(r.seconds for r in rounds)),
            "rounds": [asdict(r) for r in rounds],
        },
        "stats": summarize(standard, rounds, request.spec.k),
    }
