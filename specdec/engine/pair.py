"""A request, and a target with its optional draft model ready to run it in two lanes: the piece the
CLI, the app and the benchmarks share."""
from __future__ import annotations

import copy
import json
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

from .config import Sampling, Speculation
from .decoding import speculative_decode, standard_decode
from .drafters import NEEDS_DRAFT, RECYCLING, SAME_TOKENIZER, TREE, AdjacencyTable, best_drafter, check_draft_reads, \
    DrafterOptions, make_drafter
from .events import RoundEvent, TokenEvent
from .kvcache import CachedModel, common_prefix, context_length, new_cache, output_width
from .loaded import Loaded, TokenizerMismatch, check_tokenizers
from .policy import CostModel, make_policy
from .text import encode_prompt
from .verdicts import Divergence, numerical_tie
from .verify_costs import VerifyCosts, measure_draft_step, measure_verify_costs, speed_ratio

AUTO_K_MAX = 32
# What the speculative lane warms up on (Pair.warm_up): ordinary prose, not the request to be timed.
WARM_UP_PROMPT = "Describe a quiet morning in a small harbour town."
COSTS_VERSION = 2  # of the persisted cost models' JSON: a file of another version is ignored (2: finer
# confidence bins at the top, confidence.BIN_EDGES)


@dataclass(frozen=True)
class Request:
    prompt: str
    max_new_tokens: int = 128
    sampling: Sampling = field(default_factory=Sampling)
    spec: Speculation = field(default_factory=Speculation)
    drafter: str = "draft-model"
    raw: bool = False
    draft_layers: tuple[int, ...] | None = None  # the self drafter's layers (None: the target's first half)
    # Earlier turns of a conversation, (user, assistant) pairs oldest first: prompt is the next user
    # turn. Both lanes read the same history; see specdec.bench.spec_bench for whose answers go in it.
    history: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Session:
    """What a pair has learned by some point (copies): the cost policy's evidence and token
    recycling's table (Pair.session, Pair.resume)."""

    costs: dict[str, CostModel]
    table: AdjacencyTable


class Pair:
    """A target, an optional draft model, and one KV cache per lane so the lanes never share state.

    Both lanes produce only ids below `vocab_size`: the tokenizer's real tokens. Models pad their
    embedding matrices past the tokenizer (Qwen2.5-7B to 152,064 rows for 151,665 tokens), a padded
    id is no token, and a draft with fewer padded rows could not even read one. The same cut in both
    lanes keeps them comparing the same distribution.
    """

    def __init__(self, target: Loaded, draft: Loaded | None = None):
        self.vocab_size = min(len(target.tokenizer), output_width(target.model))
        # A draft with another tokenizer is welcome (the cross-tokenizer drafter translates); the
        # mismatch is raised only when a drafter that needs the target's ids is asked for.
        self.tokenizer_mismatch: TokenizerMismatch | None = None
        if draft is not None:  # refuse a draft that cannot work before any run, not mid-stream
            try:
                check_tokenizers(target.tokenizer, draft.tokenizer)
                check_draft_reads(draft.model, self.vocab_size)
            except TokenizerMismatch as error:
                self.tokenizer_mismatch = error
            new_cache(draft.model)
        self.target, self.draft = target, draft
        self.tokenizer = target.tokenizer
        self.eos_ids = target.eos_ids
        self._standard_lane = CachedModel(target.model, self.vocab_size)
        self._speculative_lane = CachedModel(target.model, self.vocab_size)
        # The cost policy's measurements outlive a run: they belong to this pair on this device.
        # Greedy and sampled drafts are accepted at different rates, and every setup that drafts
        # differently (drafter, layers, tree shape) has its own evidence; all share the target's
        # pass times (CostModel.sharing_passes). Keyed by setup_key.
        self.costs: dict[str, CostModel] = {}
        # v(n), a target pass over n tokens on this device, measured once at the first warm-up: the
        # cost policy's prior (verify_costs.py), and what the app and the bench show.
        self.verify_costs: VerifyCosts | None = None
        self.draft_step: float | None = None  # a draft pass over one token, timed with the table (_draft_scale)
        self.costs_file: Path | None = None  # where the cost models persist between processes (remember_costs)
        self.costs_status = "none saved"  # what restoring them did (restore_costs)
        # Token recycling's table of the target's next-token candidates: the pair's, so it warms up
        # over every request (drafters/recycling.py); made on first use.
        self._recycling_table: AdjacencyTable | None = None
        self._evidence = ""  # a name for the cost evidence of requests on a table of their own (recycling_from)

    def auto(self, request: Request) -> Request:
        """The best setup this pair has: the cost policy with every source the pair has (the mixed
        drafter; cross-tokenizer for a draft with another tokenizer), plain decoding where none pays."""
        # k up to 32: the cost policy drafts that deep only where the verify table and the draft's
        # confidence say it pays (confidence.py).
        spec = replace(request.spec, policy="cost", adaptive=False, k_max=max(request.spec.k_max, AUTO_K_MAX))
        drafter = best_drafter(self.draft is not None, self.tokenizer_mismatch is None)
        return replace(request, drafter=drafter, spec=spec)

    def prompt_ids(self, request: Request) -> list[int]:
        ids = self.encode(request)
        self.check_context(len(ids), request)
        return ids

    def encode(self, request: Request) -> list[int]:
        """The prompt's ids (with the chat template and the history), not yet checked against the
        context: a caller with a lower limit of its own checks that first (the app's max_prompt_tokens)."""
        ids = encode_prompt(self.tokenizer, request.prompt, raw=request.raw, history=request.history)
        if not ids:
            raise ValueError("the prompt is empty")
        return ids

    def check_context(self, prompt_tokens: int, request: Request) -> None:
        """The verify pass may run k positions past the last kept token, so that is budgeted too."""
        models = [self.target] + ([self.draft] if self.draft else [])
        context = min(context_length(m.model) for m in models)
        needed = prompt_tokens + request.max_new_tokens + request.spec.k_max
        if needed > context:
            raise ValueError(f"prompt ({prompt_tokens} tokens) + max_new_tokens ({request.max_new_tokens}) + "
                             f"k_max ({request.spec.k_max}) exceeds the model's context of {context} tokens")

    def standard(self, request: Request, prompt_ids: list[int] | None = None) -> Iterator[TokenEvent]:
        ids = prompt_ids if prompt_ids is not None else self.prompt_ids(request)
        return standard_decode(self._standard_lane, ids, request.sampling, request.max_new_tokens, self.eos_ids)

    def speculative(self, request: Request, prompt_ids: list[int] | None = None) -> Iterator[RoundEvent]:
        ids = prompt_ids if prompt_ids is not None else self.prompt_ids(request)
        if self.tokenizer_mismatch is not None and request.drafter in SAME_TOKENIZER:
            raise TokenizerMismatch(f"{self.tokenizer_mismatch}; the {request.drafter} drafter needs the target's "
                                    "token ids: use the cross-tokenizer drafter for this draft")
        drafter = make_drafter(request.drafter, self.drafter_options(request))
        spec = request.spec
        costs = self.cost_model(request)
        costs.start_request()  # what other text showed is a prior for this one, not a verdict
        policy = make_policy(spec.policy, spec.k, spec.k_max, costs)
        rounds = speculative_decode(self._speculative_lane, drafter, ids, spec, request.sampling,
                                    request.max_new_tokens, self.eos_ids, policy)
        return self._saving_costs(rounds) if spec.policy == "cost" else rounds

    def drafter_options(self, request: Request) -> DrafterOptions:
        """What any drafter may read for this request, gathered once (drafters.options)."""
        draft = self.draft
        return DrafterOptions(
            target_vocab_size=self._speculative_lane.vocab_size, draft_model=draft.model if draft else None,
            confidence=request.spec.confidence, target=self._speculative_lane, layers=request.draft_layers,
            tokenizers=(self.tokenizer, draft.tokenizer if draft else None), tree=request.spec.tree,
            recycled=self.recycling_table() if request.drafter in RECYCLING else None,
            eos_ids=frozenset(self.eos_ids))

    def _saving_costs(self, rounds: Iterator[RoundEvent]) -> Iterator[RoundEvent]:
        yield from rounds
        self.save_costs()  # a run that ended (not one abandoned midway) is worth remembering

    def recycling_table(self) -> AdjacencyTable:
        if self._recycling_table is None:
            self._recycling_table = self.new_recycling_table()
        return self._recycling_table

    def new_recycling_table(self) -> AdjacencyTable:
        return AdjacencyTable(self.vocab_size, self._speculative_lane.device)

    @contextmanager
    def recycling_from(self, table: AdjacencyTable | None = None, evidence: str = "") -> Iterator[AdjacencyTable]:
        """Requests inside draft token recycling from `table` (None: a new, empty one) instead of the
        pair's own, which is put back after, untouched: a bench lane's own session, or a cold start
        measured beside a warm one. With `evidence`, the cost policy keeps what these requests show
        under that name, apart from the pair's (a cold table is accepted less than a warm one)."""
        kept = self._recycling_table, self._evidence
        self._recycling_table, self._evidence = table or self.new_recycling_table(), evidence
        try:
            yield self._recycling_table
        finally:
            self._recycling_table, self._evidence = kept

    def setup_key(self, request: Request) -> str:
        """Everything that changes what a drafter's sources draft, and how often it is accepted: the
        drafter, greedy or sampled, the self drafter's layers, the tree shape of drafters that grow
        trees, and the draft model with its quantisation and engine."""
        parts = [request.drafter, "greedy" if request.sampling.greedy else "sampled"]
        if request.drafter == "self":
            parts.append(f"layers={list(request.draft_layers) if request.draft_layers is not None else 'half'}")
        if request.drafter in TREE or request.drafter == "mixed":
            parts.append(f"tree={request.spec.tree.budget}x{request.spec.tree.branching}")
        if request.drafter in NEEDS_DRAFT or request.drafter == "mixed":
            draft = self.draft
            parts.append(f"draft={draft.name}:{draft.quantize or draft.dtype}:{draft.engine}" if draft else "draft=none")
        if self._evidence and request.drafter in RECYCLING:
            parts.append(f"table={self._evidence}")
        return "|".join(parts)

    def learned(self) -> dict[str, CostModel]:
        """A copy of what the cost policy has learned on this pair (restore_learned puts it back):
        a benchmark's repeats each start from the same knowledge."""
        return copy.deepcopy(self.costs)  # one deepcopy: the setups still share their pass times

    def restore_learned(self, learned: dict[str, CostModel]) -> None:
        self.costs = copy.deepcopy(learned)

    def session(self) -> Session:
        """A copy of all this pair has learned from its speculative runs, to resume from: a
        benchmark starts each repeat of a prompt from the same one, so no repeat drafts from a table
        (or acceptance evidence) that an earlier repeat filled with this very answer."""
        return Session(self.learned(), self.recycling_table().copy())

    def resume(self, session: Session) -> None:
        """Go on from `session` (from a copy: it can be resumed again)."""
        self.restore_learned(session.costs)
        self._recycling_table = session.table.copy()

    def cost_model(self, request: Request) -> CostModel:
        """The setup's cost model, sharing the target's pass times with every other setup's."""
        key = self.setup_key(request)
        if key not in self.costs:
            shared = next(iter(self.costs.values()), None)
            self.costs[key] = shared.sharing_passes() if shared else CostModel()
            if self.verify_costs is not None and shared is None:
                self.costs[key].seed_verify(self.verify_costs)
        return self.costs[key]

    def divergence(self, prompt_ids: list[int], standard_ids: list[int], speculative_ids: list[int]) -> Divergence | None:
        """Where two greedy lanes first differ, and whether the target itself could not tell the two
        tokens apart there: None when they agree. See numerical_tie."""
        i = common_prefix(standard_ids, speculative_ids)
        if i == len(standard_ids) == len(speculative_ids):
            return None
        at = lambda ids: ids[i] if i < len(ids) else None  # noqa: E731
        logits = self._standard_lane.logits(prompt_ids + standard_ids[:i], 1)[0]
        tie = numerical_tie(logits, {at(standard_ids), at(speculative_ids)})
        return Divergence(i, at(standard_ids), at(speculative_ids), tie["margin"], tie["tolerance"], tie["dtype"],
                          tie["numerical_tie"], tuple(tie["top2"]))

    def free(self) -> None:
        """Drop both lanes' KV caches (the draft's lives in its drafter and goes with it)."""
        self._standard_lane.reset()
        self._speculative_lane.reset()

    def warm_up(self, request: Request, tokens: int = 4) -> None:
        """Run both lanes briefly so one-time costs (allocator, kernels, lazy init) are not timed;
        the first warm-up also measures the verify-cost table.

        The warm-up is often the very request about to be timed (the app's first one, a bench's
        first question), and the speculative lane learns as it drafts: the cost policy's acceptance
        over the answer's first tokens, token recycling's table of them. So the speculative lane
        warms up on text of its own (WARM_UP_PROMPT, in the request's form and settings), from a
        throwaway recycling table, and the timed run starts from what another text taught, as every
        later request does. (Warmed on the request itself, SmolLM2's table drafted a poem's first
        tokens back: 3 accepted in round 1, against 0 from an unread table; and the cost policy's
        first rounds judged the draft by this answer's own start. Learning nothing at all instead,
        a fresh process priced every source at the prior alone: docs/spec-bench/notes.md, session of
        2026-11-27 from 12:16, item 5.) The standard lane, which learns nothing, warms up on the
        request: the shapes it times are the request's."""
        short = replace(request, max_new_tokens=min(tokens, request.max_new_tokens))
        for _ in self.standard(short):
            pass
        # (only where the drafter reads one: a table costs a row per vocabulary id)
        with self.recycling_from(evidence=self._evidence) if request.drafter in RECYCLING else nullcontext():
            for _ in self.speculative(self._warm_up_text(short)):
                pass
        if self.verify_costs is None:
            self.measure_verify_costs(self.prompt_ids(request))

    def _warm_up_text(self, request: Request) -> Request:
        """request on WARM_UP_PROMPT, with no history; request itself only where that text does not
        fit the models' context (a model of a few dozen positions), the one case a warm-up still
        learns from the answer it precedes. (Without a chat template, whose markers recur, prompt
        lookup may find nothing to draft on it, and its first timed round then pays that path's
        one-time costs: a round's worth of noise, against a first answer partly known in advance.)"""
        other = replace(request, prompt=WARM_UP_PROMPT, history=())
        try:
            self.prompt_ids(other)
        except ValueError:
            return request
        return other

    def measure_verify_costs(self, context_ids: list[int]) -> VerifyCosts:
        """Time the target over each width (verify_costs.WIDTHS) and hand the table to the cost models."""
        self.verify_costs = measure_verify_costs(self._speculative_lane, context_ids)
        self.draft_step = measure_draft_step(self.draft.model, context_ids) if self.draft else None
        # Seeded before restoring, so the fresh table wins over a saved one at every width it measured
        # (seed_verify and restore fill only what is missing), and again after, for restored setups.
        self._seed_verify()
        self.restore_costs()
        self._seed_verify()
        return self.verify_costs

    def _seed_verify(self) -> None:
        for costs in self.costs.values():
            costs.seed_verify(self.verify_costs)

    # --- the cost models across processes ------------------------------------------------------

    def remember_costs(self, path: str | Path) -> None:
        """Persist what the cost policy learns at path (JSON), and start from it when a later process
        finds it there with a verify-cost table that agrees with its own (the same machine in the
        same state); one that disagrees, another version or a broken file is ignored."""
        self.costs_file = Path(path)
        if self.verify_costs is not None:
            self.restore_costs()

    def restore_costs(self) -> None:
        """Take over the saved cost models where they apply; self.costs_status says what happened
        (a benchmark reports it: a run that started cold is not one that started from saved costs)."""
        self.costs_status = self._restore_costs()

    def _restore_costs(self) -> str:
        try:
            data = json.loads(self.costs_file.read_text()) if self.costs_file else None
        except FileNotFoundError:
            return "none saved"
        except (OSError, ValueError):
            return "unreadable"
        if data is None:
            return "none saved"
        if not isinstance(data, dict):
            return "unreadable"
        if data.get("version") != COSTS_VERSION:
            return "another version"
        if self.verify_costs is None:
            return "not yet: no verify-cost table measured"
        try:
            # Another machine, or this one under another load (this 2-core host's step drifts by a
            # third within an hour), keeps the acceptance, which the pair and the text decide, and
            # takes its pass times from its own table. Its draft costs start from the saved ones
            # scaled by how much slower or faster a draft step now runs (_draft_scale), where that
            # is within a factor of 2 (the same kind of machine), else they are measured anew.
            # (Ignoring the whole file, two Spec-Bench runs started cold; resetting the draft costs
            # cost two measuring rounds a model source.)
            saved_table = VerifyCosts.from_json(data["verify_costs"])
            timings = saved_table.agrees_with(self.verify_costs)
            scale, whose = (None, "") if timings else self._draft_scale(data.get("draft_step"), saved_table)
            for key, saved in data["costs"].items():
                model = self.costs.get(key)
                if model is None:
                    shared = next(iter(self.costs.values()), None)
                    model = self.costs[key] = shared.sharing_passes() if shared else CostModel()
                model.restore(saved, timings, scale)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return "unreadable"
        if timings:
            return "restored"
        disagrees = "the verify-cost table disagrees (another machine or load)"
        if scale is None:
            return f"acceptance only: {disagrees}"
        return f"acceptance, and draft costs scaled by {scale:.2f} ({whose}): {disagrees}"

    def _draft_scale(self, saved_step: float | None, saved_table: VerifyCosts) -> tuple[float | None, str]:
        """How much slower (or faster) a draft token now runs than when the costs were saved, and
        whose step says so: the draft's own, where both processes timed it (measure_draft_step),
        else the target's; None past a factor of 2. An int8 draft's kernels need not slow down with
        an fp32 target's: on the 2-core host the target's step read 1.96x the saved one's where the
        draft ran 18.5 ms a token against 17 saved, and a new process priced its first drafts at
        34 ms a token and stopped them early."""
        if saved_step and self.draft_step:
            return speed_ratio(self.draft_step, saved_step), "the draft's step"
        return saved_table.speed_ratio(self.verify_costs), "the target's step"

    def save_costs(self) -> None:
        if self.costs_file is None or self.verify_costs is None:
            return
        data = {"version": COSTS_VERSION, "target": self.target.name, "draft": self.draft.name if self.draft else None,
                "verify_costs": self.verify_costs.to_json(), "draft_step": self.draft_step,
                "costs": {key: costs.to_json() for key, costs in self.costs.items()}}
        try:
            self.costs_file.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.costs_file.with_suffix(".tmp")
            temporary.write_text(json.dumps(data))
            temporary.replace(self.costs_file)  # whole or not at all, whatever else reads it
        except OSError as error:
            # A read-only or full disk (a Space without storage) costs the next process its head
            # start, never this run its answer: stop trying, and say so.
            self.costs_status, self.costs_file = f"{self.costs_status}; not saved: {error}", None
