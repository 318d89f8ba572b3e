"""Drafting with a smaller causal LM that shares the target's tokenizer, several tokens a pass where
guesses of its next tokens hold (staged.py)."""
from __future__ import annotations

import time

import torch

from ..config import Sampling
from .. import short_head
from ..kvcache import CachedModel, common_prefix
from ..sampling import probs_from_logits, sample_from, uniforms
from ..confidence import StopRule
from ..tree_verify import Tree
from .options import DrafterOptions
from .staged import MAX_GUESSES, GuessBudget, Guesser
from .base import Draft, DrafterBase, check_draft_reads, fit_vocab


class ModelDrafter(DrafterBase):
    """A small causal LM with its own KV cache, drafting autoregressively."""

    name = "draft-model"

    @classmethod
    def from_options(cls, options: DrafterOptions, drafter: str = "draft-model",
                     guesser: Guesser | None = None) -> "ModelDrafter":
        siblings = options.target is not None and options.target.takes_trees
        return cls(options.need_draft(drafter), options.target_vocab_size, options.confidence, guesser,
                   siblings=siblings, eos_ids=options.eos_ids)

    def __init__(self, model: torch.nn.Module, target_vocab_size: int, confidence: float = 0.0,
                 guesser: Guesser | None = None, max_guesses: int = MAX_GUESSES, siblings: bool = False,
                 eos_ids: frozenset[int] = frozenset()):
        """guesser: where the staged passes' guesses come from (staged.py; prompt lookup alone unless
        given, the mixed drafter's adds token recycling's table); max_guesses 0 drafts one token a pass.
        siblings: the target verifies trees (CachedModel.takes_trees), so a greedy chain may add a
        sibling leaf where its stop rule says that pays (_with_sibling). eos_ids: the draft ends at
        one (base.Draft.through_eos: no token after it could be kept, so drafting on is wasted)."""
        check_draft_reads(model, target_vocab_size)
        self.draft = CachedModel(model, head_rows=short_head.ROWS)
        self.target_vocab_size = target_vocab_size
        self.confidence = confidence
        self.siblings = siblings
        self.eos_ids = frozenset(eos_ids)
        # (a sliding-window draft keeps one token a pass: CachedModel.keeps_every_position)
        self.guesser = guesser or Guesser()
        self.max_guesses = max_guesses if self.draft.keeps_every_position else 0
        self.budget = GuessBudget(self.max_guesses)

    def reset(self) -> None:
        self.draft.reset()
        self.budget.start_request()  # agreement with the guesses is the text's

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None, stop: StopRule | None = None) -> Draft:
        """Up to k tokens, from staged passes (staged.py): each reads the draft's next position and
        guesses of the ones after it, and yields a token for every position read on the draft's own
        path. The draft ends early after a token it gives less than `confidence` (a fixed threshold,
        transformers' assistant_confidence_threshold), when the round's stop rule says one more
        token is not worth its cost (the cost policy's, confidence.py), or after an EOS."""
        self.draft.settle(ids)  # a shared cache's last tree path is already read: not catch-up
        catch_up = len(ids) - common_prefix(self.draft.ids, ids)
        tokens: list[int] = []
        rows, confidences = [], []  # rows: greedy logits, or the q each token was drawn from
        pending, stopped = max(1, catch_up), False  # tokens the next pass reads before its guesses
        while len(tokens) < k and not stopped:
            # 1. Guess the tokens after the draft's next one, as many as pay (GuessBudget).
            guesses = self.guesser.guess(ids + tokens, self.budget.choose(k - len(tokens) - 1, pending))
            # 2. One pass reads them all: row i predicts the token after guess i (row 0: after the last token).
            start = time.perf_counter()
            block = fit_vocab(self.draft.logits(ids + tokens + guesses, 1 + len(guesses)), self.target_vocab_size)
            # 3. The draft's own tokens off the rows read on its path.
            kept, stopped = self._take(block, guesses, sampling, generator, stop, rows, confidences)
            tokens += kept
            # 4. What the pass cost and how far its guesses held, for the next pass's budget.
            self.budget.observe(pending + len(guesses), guesses, kept, time.perf_counter() - start)
            pending = 1
        if not rows:
            return Draft([], None)
        stacked = torch.stack(rows)
        if self.siblings and sampling.greedy and getattr(stop, "siblings", False):  # (a scripted stop may not price them)
            sibling = self._with_sibling(tokens, stacked, confidences, stop, catch_up, source or self.name)
            if sibling is not None:
                return sibling
        q, logits = (None, stacked) if sampling.greedy else (stacked, None)
        return Draft(tokens, q, logits, catch_up=catch_up, confidences=tuple(confidences))

    @staticmethod
    def _with_sibling(tokens: list[int], logits: torch.Tensor, confidences: list[float], stop: StopRule,
                      catch_up: int, source: str) -> Draft | None:
        """The greedy chain plus its second choice at one position as a leaf, where the stop rule
        says that pays (StopRule.sibling); None where it does not. A tree of the chain's nodes
        0..j-1 (node i the child of i - 1) and the sibling j, a child of the chain's node before its
        position, with the draft's own reach of each (the product of its probabilities down the path)
        and `chain` set to the chain's source: the policy learns the chain's verdict from it
        (policy.chain_verdict). Greedy only: a sampled chain's q is what its tokens were drawn from,
        and a deterministic sibling beside a drawn token would need the tree rule's one-hot draws
        for both (tree_verify.sibling_q), which keep less of the chain."""
        # q2 = q1 exp(l2 - l1): the softmax that gave each token's confidence q1 is not taken again.
        top = logits.float().topk(2, dim=-1)
        gaps = (top.values[:, 1] - top.values[:, 0]).exp().tolist()
        seconds, alternatives = [c * g for c, g in zip(confidences, gaps)], top.indices[:, 1].tolist()
        at = stop.sibling(confidences, seconds)
        if at is None:
            return None
        reach = [1.0]  # reach[i + 1]: the chain's first i + 1 tokens (reach[0]: the root)
        for confidence in confidences:
            reach.append(reach[-1] * confidence)
        j = len(tokens)
        tree = Tree(tuple(tokens) + (alternatives[at],), tuple(range(-1, j - 1)) + (at - 1,))
        return Draft(list(tree.tokens), None, catch_up=catch_up, tree=tree,
                     reach=tuple(reach[1:]) + (reach[at] * seconds[at],), confidences=tuple(confidences),
                     chain=source)

    def _take(self, block: torch.Tensor, guesses: list[int], sampling: Sampling, generator: torch.Generator,
              stop: StopRule | None, rows: list, confidences: list) -> tuple[list[int], bool]:
        """The draft's token from each row of a staged pass while the row was read on its path (row
        i + 1 only where row i's token was guess i), each row and confidence appended to the round's;
        and whether the draft stops (an EOS, its confidence fell below the threshold, or the stop rule
        says so)."""
        kept: list[int] = []
        for i, logits in enumerate(block):
            if sampling.greedy:
                kept.append(int(logits.argmax()))
                rows.append(logits)
            else:  # one uniform per token, as one-token passes draw: the same stream, the same draft
                rows.append(probs_from_logits(logits, sampling))
                kept.append(sample_from(rows[-1], uniforms(1, generator)[0]))
            confidences.append(self._confidence(rows[-1], kept[-1], sampling.greedy))
            if kept[-1] in self.eos_ids:
                return kept, True
            if confidences[-1] < self.confidence or (stop is not None and not stop.keep_drafting(confidences)):
                return kept, True
            if i == len(guesses) or kept[-1] != guesses[i]:
                break
        return kept, False

    @staticmethod
    def _confidence(row: torch.Tensor, token: int, greedy: bool) -> float:
        """The probability the draft gave its token: q(x) when sampling; a greedy draft's softmax at
        T = 1, as transformers' confidence stop reads it. An unsure token is likely rejected, and every
        token after it is then wasted work."""
        return float(torch.softmax(row.float(), -1)[token] if greedy else row[token])
