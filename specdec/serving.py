"""From playground to production: a run's measured best setup as the serving flags that reproduce
it in vLLM and SGLang, and the server metrics to check it against.

The figures behind it are this device's and this workload's. A server batches requests, runs other
kernels and sees other prompts, so its best k can differ; the metric names let a user check."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from .engine.drafters import PromptLookupDrafter
from .engine.run_stats import RunStats
from .engine.sources import Source


NOTE = ("measured on this device and this prompt, not on your server: batching, other hardware and other "
        "prompts change the best k; compare the metrics below before trusting it")
METRICS = {"vllm": ("vllm:spec_decode_num_accepted_tokens_per_pos", "mean acceptance length "
                    "(1 + vllm:spec_decode_num_accepted_tokens / vllm:spec_decode_num_drafts)"),
           "sglang": ("spec_accept_length",)}


@dataclass(frozen=True)
class Serving:
    """The serving setup a run measured: vLLM's --speculative-config and SGLang's flags (None where
    neither server has the run's method, with `advice` saying what to serve instead), and the
    acceptance figures the servers' metrics (METRICS) should show."""

    k: int
    method: str | None
    mean_acceptance_length: float | None
    acceptance_by_position: tuple[float | None, ...]
    vllm_config: dict | None = None
    sglang_flags: tuple[str, ...] | None = None
    advice: str | None = None

    @property
    def vllm_flag(self) -> str | None:
        return f"--speculative-config '{json.dumps(self.vllm_config)}'" if self.vllm_config else None

    @property
    def sglang_flag(self) -> str | None:
        return " ".join(self.sglang_flags) if self.sglang_flags else None

    def to_json(self) -> dict:
        return {"k": self.k, "method": self.method, "note": NOTE,
                "expected": {"mean_acceptance_length": self.mean_acceptance_length,
                             "acceptance_by_position": list(self.acceptance_by_position)},
                "metrics": {server: list(names) for server, names in METRICS.items()},
                "vllm": {"speculative_config": self.vllm_config, "flag": self.vllm_flag} if self.vllm_config else None,
                "sglang": {"flags": list(self.sglang_flags), "flag": self.sglang_flag} if self.sglang_flags else None,
                **({"advice": self.advice} if self.advice else {})}

    @classmethod
    def from_json(cls, data: dict) -> Serving:
        expected = data.get("expected") or {}
        return cls(data["k"], data.get("method"), expected.get("mean_acceptance_length"),
                   tuple(expected.get("acceptance_by_position") or ()),
                   (data.get("vllm") or {}).get("speculative_config"),
                   tuple(data["sglang"]["flags"]) if data.get("sglang") else None, data.get("advice"))


def serving_config(stats: RunStats, drafter: str, draft_model: str | None) -> Serving:
    """vLLM's and SGLang's flags for the setup this run measured. k is the one the run settled on; a
    run that settled on k = 0 recommends serving without speculation."""
    k = round(stats.k_settled or 0)
    method = _method(stats, drafter, draft_model)
    measured = Serving(k, method, stats.tokens_per_round, tuple(stats.position_acceptance))
    if drafter in UNSERVED:
        return replace(measured, advice=UNSERVED[drafter])
    if k == 0 or method is None:
        top = _top_source(stats)
        advice = UNSERVED[top] if k and top in UNSERVED else "speculation did not pay on this run: serve without it"
        return replace(measured, advice=advice)
    if method == "ngram":
        lookup = PromptLookupDrafter()  # the n-gram range the run itself matched with
        vllm = {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_min": lookup.min_ngram,
                "prompt_lookup_max": lookup.max_ngram}
        sglang = ("--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", str(k + 1))
    else:
        vllm = {"method": "draft_model", "model": draft_model, "num_speculative_tokens": k}
        sglang = ("--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", str(draft_model),
                  "--speculative-num-steps", str(k), "--speculative-eagle-topk", "1",
                  "--speculative-num-draft-tokens", str(k + 1))
    advice = None
    if drafter in ("hybrid", "mixed"):
        advice = ("neither server mixes prompt lookup with a draft model; this is the source that drafted most "
                  f"of this run's rounds ({stats.sources})")
    return replace(measured, vllm_config=vllm, sglang_flags=sglang, advice=advice)


# Drafters neither server offers as such: no equivalent flags rather than flags that mean another thing.
UNSERVED = {
    "self": "neither vLLM nor SGLang drafts from a subset of an untrained model's own layers; their "
            "self-drafting methods (EAGLE, MTP heads) need trained draft heads",
    "cross-tokenizer": "vLLM's and SGLang's draft-model methods need a draft that shares the target's "
                       "vocabulary; serve with a same-family draft, or n-gram lookup",
    "draft-tree": "the servers' token trees come with EAGLE-style draft heads (SGLang's "
                  "--speculative-eagle-topk > 1); for a plain draft model compare the draft-model drafter "
                  "here and serve its chain",
    "lookup-tree": "vLLM's and SGLang's n-gram lookup flags are for a chain; compare the prompt-lookup "
                   "drafter here and serve that",
    "recycling": "neither vLLM nor SGLang drafts from the target's own recycled next-token guesses; compare "
                 "n-gram lookup or a draft model here and serve that",
}


def _top_source(stats: RunStats) -> str | None:
    """The drafter whose sources drafted most of the run's rounds ('draft-tree' for 'draft-tree:16'; a
    drafter's tree sizes count together: token recycling's rounds spread over 16, 8, 4 and 2 nodes)."""
    rounds: dict[str, int] = {}
    for source, count in stats.sources.items():
        drafter = Source(source).drafter
        rounds[drafter] = rounds.get(drafter, 0) + count
    return max(rounds, key=rounds.get) if rounds else None


def _method(stats: RunStats, drafter: str, draft_model: str | None) -> str | None:
    """The servers' method for the source that drafted most rounds: n-gram lookup for prompt lookup
    and its tree (served as a chain), the draft model for the draft model and its tree where there is
    one; None for a source neither server has (token recycling, self, cross-tokenizer)."""
    if drafter == "prompt-lookup":
        return "ngram"
    if drafter == "draft-model":
        return "draft_model"
    top = _top_source(stats)  # a tree source "lookup-tree:16" is served as its chain
    if top in ("prompt-lookup", "lookup-tree"):
        return "ngram"
    return "draft_model" if top in ("draft-model", "draft-tree") and draft_model else None
