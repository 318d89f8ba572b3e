"""Tree drafters: several candidates per depth, all verified by one target pass (see tree_verify.py).

A tree drafter's sources are its node budgets, "draft-tree:16", "draft-tree:8", ..., the configured
one first: the fixed and heuristic policies draft with it, the cost policy picks the budget (and
the depth k) from measured acceptance and the verify cost of each width (policy.verify_width).

Both build deterministic trees ("top" draws): each node's children are fixed once the node is, so
acceptance treats every proposal as one-hot, which is exact for the target under sampling too
(tree.sibling_q). That is EAGLE-2's q(x) = 1; a sampled chain draft can use its true q and accept
more per token, a tree makes up for it with more candidates.
"""
from __future__ import annotations

import torch

from ..config import Sampling, TreeShape
from .. import short_head
from ..kvcache import CachedModel, common_prefix
from ..sampling import probs_from_logits
from ..tree_verify import ROOT, Tree, merge_prefixes
from ..sources import Source, budget_sources
from .options import DrafterOptions
from .base import Draft, DrafterBase, check_draft_reads, fit_vocab
from .lookup import matches


class DraftTreeDrafter(DrafterBase):
    """EAGLE-2's dynamic tree (Li et al. 2024) from a small draft model.

    Depth by depth, the `branching` nodes of the newest depth that the draft is likeliest to reach
    (the product of its probabilities down the path) are expanded, each into its `branching` most
    probable tokens; the draft reads those nodes in one pass over its own cache, with the tree mask.
    At depth k the `budget` likeliest nodes of all are kept. A child is never likelier than its
    parent, so that set is closed under parents (ties go to the earlier, the parent) and is a tree.
    k depths cost k draft passes, as a chain of k does; each pass reads `branching` tokens, not 1
    (a budget below k or below `branching` caps the depth or the width: no deeper tree could be kept).
    """

    name = "draft-tree"

    @classmethod
    def from_options(cls, options: DrafterOptions, cache: CachedModel | None = None,
                     chain: str | None = None) -> "DraftTreeDrafter":
        return cls(options.need_draft(cls.name), options.target_vocab_size, options.tree, cache, chain,
                   options.eos_ids)

    def __init__(self, model: torch.nn.Module, target_vocab_size: int, shape: TreeShape = TreeShape(),
                 cache: CachedModel | None = None, chain: str | None = None, eos_ids: frozenset[int] = frozenset()):
        """cache: the draft's KV cache, shared with a chain drafter of the same model (the mixed
        drafter's), so neither reads the prompt or the other's rounds again; CachedModel keys what it
        holds by the ids it has read, so either may extend or roll back what the other left. chain:
        that chain drafter's source; a greedy tree's likeliest path is its draft, so each round of the
        tree is evidence for it too (events.TreeRound.as_chain). eos_ids: nodes never expanded (nothing
        after an EOS could be kept)."""
        check_draft_reads(model, target_vocab_size)
        if cache is not None and cache.model is not model:
            raise ValueError("a shared draft cache must hold the same model")
        self.draft = cache or CachedModel(model, head_rows=short_head.ROWS)
        self.target_vocab_size, self.shape, self.chain = target_vocab_size, shape, chain
        self.eos_ids = frozenset(eos_ids)

    def reset(self) -> None:
        self.draft.reset()

    def sources(self, ids: list[int]) -> tuple[str, ...]:
        return budget_sources(self.name, self.shape.budget)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        budget = (Source(source).budget if source else None) or self.shape.budget
        self.draft.settle(ids)  # last round's accepted path is already cached: not catch-up
        catch_up = len(ids) - common_prefix(self.draft.ids, ids)
        rows = self._probs(self.draft.logits(ids, 1), sampling)
        tokens: list[int] = []
        parents: list[int] = []
        reach: list[float] = []
        frontier, slot = [ROOT], {ROOT: ROOT}  # slot: node -> its slot in the draft's cache
        # A tree of `budget` nodes is at most that deep and wide: growing it further is wasted work.
        depth_limit, width = min(k, budget), min(self.shape.branching, budget)
        for depth in range(1, depth_limit + 1):
            born = len(tokens)
            for node, row in zip(frontier, rows):
                above = 1.0 if node == ROOT else reach[node]
                probs, picks = row.topk(min(width, row.numel()))
                for prob, token in zip(probs.tolist(), picks.tolist()):
                    if prob <= 0.0:
                        break  # top-k / top-p left fewer tokens than branching
                    tokens.append(token)
                    parents.append(node)
                    reach.append(above * prob)
            newest = [n for n in range(born, len(tokens)) if tokens[n] not in self.eos_ids]
            if depth == depth_limit or not newest:
                break
            frontier = sorted(newest, key=lambda n: (-reach[n], n))[:width]
            for node in frontier:
                slot[node] = len(slot) - 1
            logits = self.draft.extend_tree(ids, [(tokens[n], slot[parents[n]]) for n in frontier])
            rows = self._probs(logits, sampling)
        return _pruned(tokens, parents, reach, budget, catch_up, self.chain if sampling.greedy else None)

    def _probs(self, logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
        """What the tree is ranked by: the draft's distribution under the run's sampling settings
        (its own top-k / top-p set), or its softmax at T = 1 for a greedy run. Ranking only: with
        one-hot q, acceptance is exact whatever the tree holds."""
        logits = fit_vocab(logits, self.target_vocab_size)
        return torch.softmax(logits.float(), -1) if sampling.greedy else probs_from_logits(logits, sampling)


def _pruned(tokens: list[int], parents: list[int], reach: list[float], budget: int, catch_up: int,
            chain: str | None = None) -> Draft:
    """The `budget` likeliest nodes, renumbered in creation order (which is topological); chain: the
    chain source the likeliest path stands for (a greedy tree's: DraftTreeDrafter)."""
    kept = sorted(sorted(range(len(tokens)), key=lambda n: (-reach[n], n))[:budget])
    index = {ROOT: ROOT, **{node: i for i, node in enumerate(kept)}}
    tree = Tree(tuple(tokens[n] for n in kept), tuple(index[parents[n]] for n in kept))
    return Draft(list(tree.tokens), None, catch_up=catch_up, tree=tree, reach=tuple(reach[n] for n in kept),
                 chain=chain)


class LookupTreeDrafter(DrafterBase):
    """Prompt lookup with every earlier match as a branch: where the last n tokens occurred before,
    what followed each occurrence is a candidate, longest n first, latest first, common prefixes
    merged, up to the node budget. A chain keeps only the latest match and loses when it is the
    wrong one; the tree lets the target pick. Needs no model; deterministic."""

    name = "lookup-tree"
    free = True

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "LookupTreeDrafter":
        return cls(options.tree)

    def __init__(self, shape: TreeShape = TreeShape(), max_ngram: int = 3, min_ngram: int = 1):
        self.shape, self.max_ngram, self.min_ngram = shape, max_ngram, min_ngram

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        return budget_sources(self.name, self.shape.budget)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        branches = self.branches(ids, k) if k > 0 else []
        if not branches:
            return Draft([], None)
        tree = merge_prefixes(branches, (Source(source).budget if source else None) or self.shape.budget)
        # merge_prefixes numbers nodes as met and stops at the budget: a smaller budget's tree is
        # this one's first nodes (nested).
        return Draft(list(tree.tokens), None, tree=tree, nested=True)

    def branches(self, ids: list[int], k: int) -> list[list[int]]:
        return [ids[start + n : start + n + k] for n, starts in matches(ids, self.max_ngram, self.min_ngram)
                for start in reversed(starts)]


