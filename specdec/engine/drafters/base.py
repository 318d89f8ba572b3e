"""Drafters propose the next k tokens; the target then verifies them in one pass.

A drafter returns the distributions it actually sampled from (q). A deterministic drafter returns
q = None, which the engine reads as one-hot on its tokens: that is what makes the residual
max(p - q, 0) right for prompt lookup and for a greedy draft model."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import torch

from ..config import Sampling
from ..kvcache import input_rows
from ..sources import Source
from ..tree_verify import Tree


@dataclass(frozen=True)
class Draft:
    tokens: list[int]
    q: torch.Tensor | None  # [len(tokens), V_target]; None for a deterministic drafter (one-hot)
    # A greedy model draft's logits [len(tokens), V_target]: not part of the rule (its q is one-hot),
    # kept so the analytic acceptance can be measured after the timed window.
    logits: torch.Tensor | None = None
    # Committed tokens a model drafter had to read before drafting: 1-2 when it drafted the round
    # before, the whole prompt on its first round, more after rounds it sat out.
    catch_up: int = 0
    # A tree drafter's proposal (tokens are then its nodes' tokens) and the draft's own probability of
    # reaching each node, the product of its choices' probabilities down the path (None if unknown).
    tree: Tree | None = None
    reach: tuple[float, ...] | None = None
    # Where each tree node came from, for a drafter with more than one origin (token recycling:
    # "table", "context" or "both"); None otherwise.
    origins: tuple[str, ...] | None = None
    # A model draft's confidence in each token: the probability it gave it (confidence.py).
    confidences: tuple[float, ...] = ()
    # A tree whose first b nodes are the tree its drafter proposes with a budget of b (best-first
    # growth, a budget-cut trie): one verified round is then evidence for every smaller budget too
    # (events.TreeRound.first).
    nested: bool = False
    # The chain source whose draft is this tree's likeliest path: a greedy draft tree of the chain's
    # own model (events.TreeRound.as_chain), so a round of the tree is also evidence for the chain.
    chain: str | None = None

    def through_eos(self, eos: frozenset[int] | set[int]) -> "Draft":
        """The chain up to and including its first EOS. Nothing drafted after an EOS can be kept: an
        accepted EOS ends the answer (decoding._truncate), and a rejected one rejects every token after
        it. The cut reads only the draft's own tokens, as a confidence stop does, so the rule stays
        exact (verify.py: k may depend on the draft's draws); the target's pass is narrower. A tree is
        left whole (its drafters do not grow below an EOS node: tree_drafters.DraftTreeDrafter)."""
        if self.tree is not None or not eos:
            return self
        cut = next((i + 1 for i, token in enumerate(self.tokens) if token in eos), len(self.tokens))
        if cut == len(self.tokens):
            return self
        return replace(self, tokens=self.tokens[:cut], q=None if self.q is None else self.q[:cut],
                       logits=None if self.logits is None else self.logits[:cut],
                       confidences=self.confidences[:cut])


class Drafter(Protocol):
    name: str

    def reset(self) -> None: ...

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        """Who could draft after ids, preferred first: the drafter itself, or a hybrid's sources.
        A policy keeps its acceptance and cost evidence per source and picks one."""
        ...

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        """Up to k tokens to follow ids, from source (one of sources(ids); None: the first)."""
        ...


class DrafterBase:
    """What most drafters share: one source, their own name, and nothing to reset between requests
    (a drafter with a cache or per-request state overrides reset).

    A free drafter (prompt lookup, lookup-tree, token recycling) proposes deterministically, with no
    model pass and no random draw, so what it would have drafted can be asked any round at the cost
    of a lookup (peek), and its first token judged against the round's first committed token
    (CostModel.observe_free): its alpha_1 is then measured every round, not only in those it drafts."""

    name: str
    free = False

    def reset(self) -> None:
        pass

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        return (Source(self.name),)

    def peek(self, ids: list[int], k: int, source: str | None = None) -> Draft:
        """A free drafter's proposal, with no side effect on the drafter (propose may keep state for
        the pass that reads its draft)."""
        return self.propose(ids, k, Sampling(), None, source)  # type: ignore[attr-defined]

    def free_drafts(self, ids: list[int], k: int, chosen: str | None, offered: tuple[Source, ...]
                    ) -> dict[Source, Draft]:
        """What a free drafter would have drafted this round where `chosen` (None: nothing) drafts
        instead: its first source's draft (a tree drafter's biggest, whose first nodes stand for its
        smaller budgets), unless that source is the one chosen, is not among the round's `offered`
        sources (the mixed drafter offers recycling only where its table has a row), or has
        nothing to draft."""
        if not self.free or k < 1:
            return {}
        first = self.sources(ids)[0]
        if first == chosen or first not in offered:
            return {}
        draft = self.peek(ids, k, first)
        return {first: draft} if draft.tokens else {}


def fit_vocab(logits: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Bring draft logits to the target's vocabulary size. Same-tokenizer pairs often pad their
    embedding matrices differently; ids the target lacks get -inf so the draft never samples them
    (and q stays the distribution it really sampled from)."""
    size = logits.shape[-1]
    if size >= vocab_size:
        return logits[..., :vocab_size]
    pad = logits.new_full((*logits.shape[:-1], vocab_size - size), float("-inf"))
    return torch.cat([logits, pad], dim=-1)


def check_draft_reads(model: torch.nn.Module, target_vocab_size: int) -> None:
    """The draft reads every committed id, so every id the target can emit must be a row of its
    embedding (Qwen2.5-7B's head has 152,064 rows, the 0.5B draft's embedding 151,936)."""
    if input_rows(model) < target_vocab_size:
        raise ValueError(f"the draft's embedding has {input_rows(model)} rows but the target can produce ids "
                         f"up to {target_vocab_size - 1}; limit the target's vocabulary to the real tokens "
                         f"(Pair does this from the tokenizer) or use a draft that covers them")
