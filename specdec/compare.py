"""Standard vs speculative decoding of one request on one target: the piece the CLI, the app and
the benchmarks share."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import Iterator

import torch

from .config import Sampling, Speculation
from .decoding import speculative_decode, standard_decode
from .drafters import check_draft_reads, make_drafter
from .events import RoundEvent, TokenEvent
from .kvcache import CachedModel, common_prefix, new_cache, output_width
from .loading import Loaded, check_tokenizers
from .stats import alpha_analytic, alpha_mle, alpha_naive, cost_ratio, expected_tokens, median_step_seconds, \
    position_acceptance, predicted_speedup_rounds
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
    """A target, an optional draft model, and one KV cache per lane so the lanes never share state.

    Both lanes produce only ids below `vocab_size`: the tokenizer's real tokens. Models pad their
    embedding matrices past the tokenizer (Qwen2.5-7B to 152,064 rows for 151,665 tokens), a padded
    id is no token, and a draft with fewer padded rows could not even read one. The same cut in both
    lanes keeps them comparing the same distribution.
    """

    def __init__(self, target: Loaded, draft: Loaded | None = None):
        self.vocab_size = min(len(target.tokenizer), output_width(target.model))
        if draft is not None:  # refuse a draft that cannot work before any run, not mid-stream
            check_tokenizers(target.tokenizer, draft.tokenizer)
            check_draft_reads(draft.model, self.vocab_size)
            new_cache(draft.model)
        self.target, self.draft = target, draft
        self.tokenizer = target.tokenizer
        self.eos_ids = target.eos_ids
        self._standard_lane = CachedModel(target.model, self.vocab_size)
        self._speculative_lane = CachedModel(target.model, self.vocab_size)

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

    def divergence(self, prompt_ids: list[int], standard_ids: list[int], speculative_ids: list[int]) -> dict | None:
        """Where two greedy lanes first differ, and whether the target itself could not tell the two
        tokens apart there: None when they agree. See numerical_tie."""
        i = common_prefix(standard_ids, speculative_ids)
        if i == len(standard_ids) == len(speculative_ids):
            return None
        at = lambda ids: ids[i] if i < len(ids) else None  # noqa: E731
        logits = self._standard_lane.logits(prompt_ids + standard_ids[:i], 1)[0]
        return {"index": i, "standard_token": at(standard_ids), "speculative_token": at(speculative_ids),
                **numerical_tie(logits, {at(standard_ids), at(speculative_ids)})}

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


def numerical_tie(logits: torch.Tensor, tokens: set) -> dict:
    """A greedy divergence is a numerical tie when the two tokens are the target's top two and their
    logits differ by no more than the rounding of the model's dtype can move them.

    A k+1-token verify pass and a one-token step add up the same numbers in a different order; in
    bf16 (8 bits of mantissa) that moves a logit of 20 by up to about 0.1, enough to flip an argmax
    that sits on a near-tie with no bug behind it. The tolerance, 4 eps |top logit|, is then about
    0.6 in bf16 and 2e-5 in fp32, where the tests keep asserting strict identity.
    """
    top = torch.topk(logits.float(), 2)
    margin = float(top.values[0] - top.values[1])
    tolerance = 4 * torch.finfo(logits.dtype).eps * max(1.0, abs(float(top.values[0])))
    return {"margin": margin, "tolerance": tolerance, "dtype": str(logits.dtype).removeprefix("torch."),
            "top2": top.indices.tolist(),
            "numerical_tie": margin <= tolerance and tokens <= set(top.indices.tolist())}


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
    drafted = [len(r.drafted) for r in rounds]
    accepted = [r.accepted for r in rounds]
    spec_ids = [t for r in rounds for t in r.tokens]
    std_seconds = sum(e.seconds for e in standard)
    spec_seconds = sum(r.seconds for r in rounds)
    step = median_step_seconds([e.seconds for e in standard])
    alpha = alpha_mle(drafted, accepted)
    # Costs are steady-state, like the standard step: round 0 carries both models' prefill.
    steady = rounds[1:] or rounds
    c = cost_ratio(sum(r.draft_seconds for r in steady), sum(len(r.drafted) for r in steady), step)
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
    }
    if greedy:
        stats["identical"] = [e.token for e in standard] == spec_ids
    return stats


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
