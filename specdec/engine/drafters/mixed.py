"""Every source a pair has, in one drafter: the cost policy picks one each round.

Prompt lookup and its tree where the context repeats (they cost nothing and have a draft only there),
the draft model and its tree where there is a draft model, and any other member (token recycling).
Each member keeps its own state; the draft model's chain and tree share one KV cache (a request's
prompt is read once, not once each, and a switch between them reads nothing again), which catches
up in one pass on the tokens committed while a free member drafted. The policy weighs each source
by its own measured acceptance and cost (policy.py) and the drafted tokens are verified as any
member's are (the draft model's passes read guesses from the context and token recycling's table
beside its next token: staged.py), so the output is exact whichever drafts. Tree members offer only their configured
budget: each source costs a measuring round before the policy trusts it, and the smaller budgets of
a tree rarely beat its configured one and a chain together. Token recycling is the exception (sources).
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..config import Sampling
from ..confidence import StopRule
from ..sources import Source
from .base import Draft, Drafter
from .lookup import PromptLookupDrafter
from .model import ModelDrafter
from .staged import Guesser
from .options import DrafterOptions
from .recycling import RecyclingDrafter
from .tree_drafters import DraftTreeDrafter, LookupTreeDrafter


class MixedDrafter:
    name = "mixed"

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "MixedDrafter":
        """Its members: lookup always, the draft model where there is one, their trees and token
        recycling where the models take a tree mask (eager or sdpa attention, no sliding window)."""
        trees = options.target is not None and options.target.takes_trees
        lookup = PromptLookupDrafter()
        members: list[Drafter] = [lookup] + ([LookupTreeDrafter(options.tree)] if trees else [])
        if options.draft_model is not None:
            # Its staged passes guess from the context and token recycling's table (staged.py).
            chain = ModelDrafter.from_options(options, guesser=Guesser(lookup, options.recycled))
            members.append(chain)
            if trees and chain.draft.takes_trees:  # one KV cache for both: the prompt is read once
                members.append(DraftTreeDrafter.from_options(options, cache=chain.draft, chain=chain.name))
        if trees:  # after the draft model: the policy measures unmeasured sources in this order
            members.append(RecyclingDrafter.from_options(options, matcher=lookup))  # one n-gram lookup a round
        return cls(members)

    def __init__(self, members: Sequence[Drafter]):
        if not members:
            raise ValueError("the mixed drafter needs at least one member")
        self.members = list(members)
        self.lookups = [m for m in self.members if isinstance(m, (PromptLookupDrafter, LookupTreeDrafter))]
        self.matcher = next((m for m in self.members if isinstance(m, PromptLookupDrafter)), PromptLookupDrafter())

    def reset(self) -> None:
        for member in self.members:
            member.reset()

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        """Each member's first source, then token recycling's smaller trees; lookup members only where
        the last n-gram occurred before, token recycling only where the table has a row for the last
        token. None at all where nothing has a draft: the policy decodes plainly (Policy.choose).
        A source offered with no draft to make would cost a round its choice and teach the policy
        nothing (an empty round tests no position), so a free source that is often empty would be
        chosen again and again over a draft model that pays."""
        has_match = self.matcher.match(ids) is not None
        members = [m for m in self.members if (has_match or m not in self.lookups)
                   and (not isinstance(m, RecyclingDrafter) or m.has_row(ids[-1]))]
        # Token recycling offers its smaller trees too: it has no draft model to pay for, so a tree of
        # 2 or 4 nodes, whose pass costs about a plain step, is where it pays on a small CPU target.
        # They come last: the policy measures unmeasured sources in this order, and a short answer
        # should reach the draft model before it has tried every tree size.
        smaller = [s for m in members if isinstance(m, RecyclingDrafter) for s in m.sources(ids)[1:]]
        offered = tuple(m.sources(ids)[0] for m in members) + tuple(smaller)
        return offered

    def free_drafts(self, ids: list[int], k: int, chosen: str | None, offered: tuple[Source, ...]
                    ) -> dict[Source, Draft]:
        """What each free member (prompt lookup, lookup-tree, token recycling: base.DrafterBase) would
        have drafted this round where `chosen` drafts instead (None: nothing does), if offered."""
        drafts: dict[Source, Draft] = {}
        for member in self.members:
            free_drafts = getattr(member, "free_drafts", None)
            if free_drafts is not None:
                drafts.update(free_drafts(ids, k, chosen, offered))
        return drafts

    def observe(self, fed: list[int], logits: torch.Tensor, previous: list[int] | None = None) -> None:
        for member in self.members:
            if hasattr(member, "observe"):
                member.observe(fed, logits, previous)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None, stop: StopRule | None = None) -> Draft:
        source = source or self.sources(ids)[0]
        member = next(m for m in self.members if source in m.sources(ids))
        return member.propose(ids, k, sampling, generator, source, **({"stop": stop} if stop is not None else {}))
