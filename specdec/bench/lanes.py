"""The timed lanes of one repeat: our standard and speculative decoding, model.generate, and the
transformers features that do what a drafter does (the peers).

Every lane is timed the same way: a synchronized clock read right before the call and right after
its last token, with nothing else running, so each lane's seconds are wall-clock seconds a user
would wait (our lanes also keep the engine's own sum of per-event seconds). The baseline is never
handicapped: same model object, dtype, device, prompt ids, max_new_tokens and EOS ids, greedy or
the same temperature/top-k/top-p, no repetition penalty, no min_new_tokens.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import torch
from transformers import GenerationConfig

from ..engine.run_stats import summarize
from ..engine.config import Sampling, Speculation
from ..engine.drafters.lookup import MAX_NGRAM
from ..engine.drafters.layers import decoder_layers, first_layers
from ..engine.loaded import Loaded
from ..engine.pair import Pair, Request, Session
from ..engine.timing import Clock
from .grid import AUTO
from .meters import Forwards, OtherLoad

STANDARD, SPECULATIVE, GENERATE = "standard", "speculative", "generate"


@dataclass(frozen=True)
class Models:
    """What a setup loaded: the engine's pair plus the raw models the peers are given."""

    pair: Pair
    target: Loaded
    draft: Loaded | None
    draft_layers: tuple[int, ...] | None = None  # the self drafter's, resolved against the target


@dataclass(frozen=True)
class Peer:
    """A transformers feature that does what one of our drafters does, under one policy."""

    name: str
    label: str
    kwargs: Callable[[Models, int], dict]  # (models, k) -> extra generate() arguments
    # True: assisted generation, run only where the setup has a draft model; False: run only where it
    # has none (what a transformers user without a draft model would run instead); None: either.
    with_draft: bool | None = None


def _assisted(schedule: str, confidence: float | None = None) -> Callable[[Models, int], dict]:
    """confidence None keeps transformers' default assistant_confidence_threshold (drafting stops
    early when the draft's top probability falls below it); 0 turns it off, so exactly k tokens are
    drafted per round, as ours does."""
    def kwargs(models: Models, k: int) -> dict:
        # transformers 5 builds the candidate generator from the assistant's own generation_config
        # (num_assistant_tokens passed to generate() does not reach it), and the heuristic schedule
        # writes its last k back there after each call: set everything before every call so each
        # run starts at k, as ours does, whatever lane ran before.
        config = models.draft.model.generation_config
        config.num_assistant_tokens = k
        config.num_assistant_tokens_schedule = schedule
        config.assistant_confidence_threshold = confidence
        return {"assistant_model": models.draft.model}
    return kwargs


def _assisted_defaults(models: Models, k: int) -> dict:
    """What `generate(assistant_model=draft)` gives a user who sets nothing else: transformers 5's
    GenerationConfig defaults, restored before every call because the run writes back into them."""
    config, defaults = models.draft.model.generation_config, GenerationConfig()
    for name in ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold"):
        setattr(config, name, getattr(defaults, name))
    return {"assistant_model": models.draft.model}


def _universal(models: Models, k: int) -> dict:
    """transformers' universal assisted generation: a draft with another tokenizer (the string path
    when greedy, the token intersection when sampling), at constant k without a confidence stop, as ours."""
    kwargs = _assisted("constant", 0.0)(models, k)
    if models.pair.tokenizer_mismatch is None:  # transformers refuses assistant_tokenizer for a same-tokenizer draft
        return kwargs
    return {**kwargs, "tokenizer": models.target.tokenizer, "assistant_tokenizer": models.draft.tokenizer}


def _early_exit(models: Models, k: int) -> dict:
    """transformers' assistant_early_exit: the target's first L layers draft, at constant k. It needs
    the self drafter's layers to be a first-L prefix; otherwise there is no peer to run."""
    layers = models.draft_layers or first_layers(len(decoder_layers(models.target.model)))
    if layers != tuple(range(len(layers))):
        raise ValueError(f"transformers' early exit drafts from the first L layers, not {list(layers)}")
    config = models.target.model.generation_config
    config.num_assistant_tokens, config.num_assistant_tokens_schedule = k, "constant"
    config.assistant_confidence_threshold = 0.0
    return {"assistant_early_exit": len(layers)}


def _prompt_lookup(models: Models, k: int) -> dict:
    # Match our drafter's longest n-gram so both look for the same matches.
    return {"prompt_lookup_num_tokens": k, "max_matching_ngram_size": MAX_NGRAM}


# (drafter, policy) -> peers. A drafter with no entry (a new strategy) is benchmarked on its own.
PEERS: dict[tuple[str, str], tuple[Peer, ...]] = {
    ("draft-model", "fixed"): (
        Peer("hf-assisted", "transformers assisted, constant k, default confidence stop", _assisted("constant")),
        Peer("hf-assisted-fixed-k", "transformers assisted, constant k, no confidence stop",
             _assisted("constant", 0.0)),
    ),
    ("draft-model", "heuristic"): (Peer("hf-assisted", "transformers assisted, heuristic k", _assisted("heuristic")),),
    ("prompt-lookup", "fixed"): (Peer("hf-prompt-lookup", "transformers prompt lookup", _prompt_lookup),),
    # auto (Pair.auto) against what transformers users actually run, and its best schedule; with no
    # draft model, transformers' prompt lookup.
    (AUTO, "cost"): (
        Peer("hf-assisted-defaults", "transformers assisted with its defaults (20 tokens, constant, confidence "
             "stop 0.4)", _assisted_defaults, with_draft=True),
        Peer("hf-assisted", "transformers assisted, heuristic k", _assisted("heuristic"), with_draft=True),
        Peer("hf-prompt-lookup", "transformers prompt lookup", _prompt_lookup, with_draft=False),
    ),
    ("prompt-lookup", "cost"): (Peer("hf-prompt-lookup", "transformers prompt lookup", _prompt_lookup),),
    ("cross-tokenizer", "fixed"): (
        Peer("hf-universal", "transformers universal assisted generation, constant k", _universal),),
    ("self", "fixed"): (Peer("hf-early-exit", "transformers assistant_early_exit, constant k", _early_exit),),
}


def peers_for(drafter: str, policy: str, has_draft: bool = True) -> tuple[Peer, ...]:
    """The peers a cell of (drafter, policy) runs on a setup with or without a draft model."""
    return tuple(p for p in PEERS.get((drafter, policy), ()) if p.with_draft in (None, has_draft))


def make_request(prompt: str, max_new_tokens: int, temperature: float, seed: int, drafter: str = "prompt-lookup",
                 k: int = 4, policy: str = "fixed", draft_layers: tuple[int, ...] | None = None) -> Request:
    """A lane's request; an auto cell's gets its drafter from Pair.auto (see _run_job)."""
    return Request(prompt, max_new_tokens, Sampling(temperature=temperature, seed=seed),
                   Speculation(k=k, policy=policy), "prompt-lookup" if drafter == AUTO else drafter,
                   draft_layers=draft_layers)


def lane_record(token_ids: list[int], seconds: float, reference: list[int] | None,
                engine_seconds: float | None = None, others: float | None = None) -> dict:
    """One lane's measurement. reference: our standard decoding's ids on greedy runs (None when sampled)."""
    record = {
        "tokens": len(token_ids),
        "seconds": seconds,
        "tokens_per_s": len(token_ids) / seconds if seconds > 0 else None,
        "engine_seconds": engine_seconds,
        "other_cores": others,  # CPU cores other processes used while this lane ran
        "matches_standard": None,
        "first_difference": None,
    }
    if reference is not None:
        record["matches_standard"] = token_ids == reference
        if token_ids != reference:
            record["first_difference"] = next((i for i, (a, b) in enumerate(zip(token_ids, reference)) if a != b),
                                          min(len(token_ids), len(reference)))
    return record


def _timed(models: Models, lane) -> tuple[list, float]:
    """Drain one of our lanes between two synchronized clock reads, then free its caches."""
    clock = Clock(models.target.device)
    start = clock.now()
    events = list(lane)
    seconds = clock.now() - start
    models.pair.free()
    return events, seconds


def run_standard(models: Models, request: Request, ids: list[int]) -> tuple[list, float]:
    return _timed(models, models.pair.standard(request, ids))


def run_speculative(models: Models, request: Request, ids: list[int]) -> tuple[list, float]:
    return _timed(models, models.pair.speculative(request, ids))


def run_generate(models: Models, request: Request, ids: list[int],
                 extra: dict | None = None) -> tuple[list[int], float]:
    """transformers' model.generate on the same ids, with settings spelled out rather than inherited
    from the checkpoint's generation_config (which may carry a repetition penalty or sampling)."""
    target, sampling = models.target, request.sampling
    eos = models.pair.eos_ids
    pad = target.tokenizer.pad_token_id if target.tokenizer.pad_token_id is not None else eos[0]
    kwargs = dict(max_new_tokens=request.max_new_tokens, min_new_tokens=None, eos_token_id=eos, pad_token_id=pad,
                  repetition_penalty=1.0, num_beams=1, use_cache=True)
    if sampling.greedy:
        kwargs.update(do_sample=False, temperature=None, top_k=None, top_p=None)
    else:
        kwargs.update(do_sample=True, temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p)
        torch.manual_seed(sampling.seed)
    x = torch.tensor([ids], dtype=torch.long, device=target.device)
    clock = Clock(target.device)
    start = clock.now()
    with torch.inference_mode():
        out = target.model.generate(x, attention_mask=torch.ones_like(x), **kwargs, **(extra or {}))
    seconds = clock.now() - start
    return out[0, len(ids):].tolist(), seconds


@dataclass(frozen=True)
class Job:
    """One lane of one repeat: the cell it belongs to (None for a baseline) and its name."""

    cell: object | None
    lane: str
    peer: Peer | None = None


def jobs_for(cells, has_draft: bool = True) -> list[Job]:
    jobs = [Job(None, GENERATE), Job(None, STANDARD)]
    for cell in cells:
        jobs.append(Job(cell, SPECULATIVE))
        jobs += [Job(cell, p.name, p) for p in peers_for(cell.drafter, cell.policy, has_draft)]
    return jobs


def rotated(jobs: list[Job], repeat: int) -> list[Job]:
    """Each repeat starts one lane later, so no lane is always the first (or last) one timed."""
    shift = repeat % len(jobs)
    return jobs[shift:] + jobs[:shift]


def run_repeat(models: Models, group, cells, repeat: int, tick: Callable[[], None] = lambda: None,
               session: Session | None = None) -> dict:
    """Time every lane of the group's cells once, one after the other; returns {cell key: record}.
    Each speculative lane starts from `session` (Pair.session) where one is given: what the pair
    learned before this prompt, not what another lane (or repeat) learned of this very answer."""
    seed = repeat
    base = make_request(group.prompt.text, group.max_new_tokens, group.temperature, seed)
    ids = models.pair.prompt_ids(base)
    load_before = os.getloadavg()[0]
    raw: dict[tuple, tuple] = {}
    others: dict[tuple, float | None] = {}
    forwards: dict[tuple, dict] = {}
    for job in rotated(jobs_for(cells, models.draft is not None), repeat):
        key = (job.cell.key if job.cell else None, job.lane)
        if session is not None and job.lane == SPECULATIVE:
            models.pair.resume(session)  # off the clock, before the lane's monitors start
        monitor, counter = OtherLoad(), Forwards(models.target.model, models.draft and models.draft.model)
        try:
            raw[key] = _run_job(models, group, job, ids, seed)
        finally:
            forwards[key] = counter.close() | {"major_faults": monitor.faulted()}
        others[key] = monitor.cores()
        tick()
    load_after = os.getloadavg()[0]

    std_events, std_seconds = raw[(None, STANDARD)]
    greedy = Sampling(temperature=group.temperature).greedy
    reference = [e.token for e in std_events] if greedy else None
    standard = lane_record([e.token for e in std_events], std_seconds, None, sum(e.seconds for e in std_events),
                           others[(None, STANDARD)]) | forwards[(None, STANDARD)]
    gen_ids, gen_seconds = raw[(None, GENERATE)]
    records = {}
    for cell in cells:
        rounds, spec_seconds = raw[(cell.key, SPECULATIVE)]
        lanes = {
            GENERATE: lane_record(gen_ids, gen_seconds, reference, others=others[(None, GENERATE)])
            | forwards[(None, GENERATE)],
            STANDARD: {**standard, "matches_standard": True if greedy else None},
            SPECULATIVE: lane_record([t for r in rounds for t in r.tokens], spec_seconds, reference,
                                     sum(r.seconds for r in rounds), others[(cell.key, SPECULATIVE)])
            | forwards[(cell.key, SPECULATIVE)],
        }
        for peer in peers_for(cell.drafter, cell.policy, models.draft is not None):
            peer_ids, peer_seconds = raw[(cell.key, peer.name)]
            lanes[peer.name] = {**lane_record(peer_ids, peer_seconds, reference, others=others[(cell.key, peer.name)]),
                                **forwards[(cell.key, peer.name)], "label": peer.label}
        records[cell.key] = {
            "repeat": repeat, "seed": seed, "loadavg": [load_before, load_after], "lanes": lanes,
            "stats": summarize(std_events, rounds, cell.k, greedy=greedy).to_json(),
            "rounds": [[r.draft_length, r.accepted] for r in rounds],
        }
    return records


def busiest(records: dict) -> float:
    """The most CPU other processes took during any lane of a repeat (cores)."""
    return max((lane.get("other_cores") or 0.0 for rec in records.values() for lane in rec["lanes"].values()),
               default=0.0)


def _run_job(models: Models, group, job: Job, ids: list[int], seed: int, max_new_tokens: int | None = None):
    n = max_new_tokens or group.max_new_tokens
    cell = job.cell
    request = make_request(group.prompt.text, n, group.temperature, seed,
                           *((cell.drafter, cell.k, cell.policy) if cell else ()), draft_layers=models.draft_layers)
    if cell and cell.drafter == AUTO:
        request = models.pair.auto(request)  # auto is Pair.auto's, as the CLI and the app run it
    if job.lane == STANDARD:
        return run_standard(models, request, ids)
    if job.lane == SPECULATIVE:
        return run_speculative(models, request, ids)
    extra = job.peer.kwargs(models, cell.k) if job.peer else None
    return run_generate(models, request, ids, extra)


def warm_up(models: Models, group, cells, tokens: int = 4) -> None:
    """Every lane once, briefly and untimed: one-time costs (allocator growth, lazy init, the first
    pass at this prompt length) land here instead of in the first measured lane."""
    base = make_request(group.prompt.text, group.max_new_tokens, group.temperature, 0)
    ids = models.pair.prompt_ids(base)
    for job in jobs_for(cells, models.draft is not None):
        _run_job(models, group, job, ids, 0, min(tokens, group.max_new_tokens))
