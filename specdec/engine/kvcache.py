"""A causal LM plus its KV cache, fed by token sequence rather than by increments.

`logits(ids, n)` makes the cache hold the longest prefix of `ids` it already has, feeds the rest in
one forward pass and returns the logits of the last n positions. Rolling back after a rejection is
then not a special case: the next call shares only the accepted prefix with what is cached, so the
stale drafted positions are cropped away, whether all, some or none of the drafts were accepted.

Sliding-window layers (Mistral, Phi-3, Gemma-3) normally keep only the last window - 1 positions, and
then cannot be rolled back. The cache records past states instead (transformers' own assisted
generation does the same) and trims them back to the window at each rollback, so rollback is exact.
Layers with recurrent state (Mamba, linear attention) cannot be rolled back at
all: such models are refused up front rather than failing after text has streamed.

A token tree (tree_verify.py) is fed the same way: the cache then holds, after the committed tokens, tree
nodes ("slots") that only some later call confirms. Every call first settles them: the slots that
spell the next committed tokens are gathered into place, the other branches dropped.
"""
from __future__ import annotations

import inspect

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, LinearAttentionCacheLayerMixin

from .short_head import ShortHead
from .tree_verify import ROOT, TREE_ATTENTION, Tree, gather_cache, slot_inputs


class UnsupportedModel(ValueError):
    """A model whose cache cannot be rolled back to the accepted prefix."""


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


def new_cache(model: torch.nn.Module) -> DynamicCache:
    """An empty cache that can be cropped back to any prefix, or UnsupportedModel naming why not."""
    name = type(model).__name__
    if "past_key_values" not in inspect.signature(model.forward).parameters:
        raise UnsupportedModel(f"{name} takes no KV cache (past_key_values), so speculative decoding "
                               "cannot roll it back; use a transformer model")
    cache = DynamicCache(config=model.config)
    recurrent = sorted({type(layer).__name__ for layer in cache.layers
                        if isinstance(layer, LinearAttentionCacheLayerMixin)})
    if recurrent:
        raise UnsupportedModel(f"{name} keeps recurrent state ({', '.join(recurrent)} layers), which cannot be "
                               "rolled back to the accepted prefix after a rejection; specdec supports "
                               "attention-only models (full or sliding-window)")
    cache.activate_past_recording()
    return cache


def output_width(model: torch.nn.Module) -> int:
    return model.get_output_embeddings().out_features


def context_length(model: torch.nn.Module) -> int:
    """The positions the model was built for (max_position_embeddings; unbounded when it says none)."""
    return getattr(model.config, "max_position_embeddings", None) or 10**9


def input_rows(model: torch.nn.Module) -> int:
    return model.get_input_embeddings().num_embeddings


class CachedModel:
    """vocab_size, when given, cuts the logits to the ids below it: padded embedding rows that are
    no token (or that the draft cannot read) are then never produced, by whichever lane uses it.
    head_rows, for a draft: its logits come from a short head (short_head.py), the first head_rows
    ids and the context's, where the model allows one; None, the whole head."""

    def __init__(self, model: torch.nn.Module, vocab_size: int | None = None, head_rows: int | None = None):
        self.model = model
        self.device = next(model.parameters()).device
        width = output_width(model)
        if vocab_size is not None and not 1 <= vocab_size <= width:
            raise ValueError(f"vocab_size must be in [1, {width}] (the logits' width), got {vocab_size}")
        self.vocab_size = vocab_size or width
        self._takes_logits_to_keep = "logits_to_keep" in inspect.signature(model.forward).parameters
        self.head = ShortHead.of(model, head_rows)
        self.reset()  # builds the cache: a model that cannot be rolled back is refused here

    def reset(self) -> None:
        """Drop the cache (frees its memory)."""
        self.cache = new_cache(self.model)
        self.ids: list[int] = []  # committed tokens cached, positions 0..len - 1
        self.slots: list[tuple[int, int]] = []  # tree nodes cached after them: (token, parent slot or ROOT)
        if self.head is not None:
            self.head.start_request()

    def crop(self, length: int) -> None:
        """Keep the first `length` cached positions (transformers 5 counts the positions to remove).

        A sliding layer trims its recorded states back to the window only here, at a rollback. That
        is what keeps rollback exact: everything fed since the last rollback is still there, and a
        later rollback never reaches further back, because positions before a rollback point are
        committed. Between rollbacks (a lane that is never corrected) the record grows like a full
        attention cache, while attention itself still reads only the window."""
        self._drop_slots()
        drop = len(self.ids) - length
        if drop > 0:
            self.cache.crop(-drop)
            del self.ids[length:]

    @torch.inference_mode()
    def logits(self, ids: list[int], n: int = 1) -> torch.Tensor:
        """[n, V] logits predicting the tokens after ids[-n], ..., ids[-1]."""
        if not 1 <= n <= len(ids):
            raise ValueError(f"need 1 <= n <= len(ids), got n={n}, len(ids)={len(ids)}")
        self.settle(ids)
        # At least the last n positions must be fed to get their logits.
        keep = min(common_prefix(self.ids, ids), len(ids) - n)
        self.crop(keep)
        new = torch.tensor([ids[keep:]], dtype=torch.long, device=self.device)
        logits = self._forward(ids, n, input_ids=new)
        self.ids = list(ids)
        return logits

    # --- token trees ------------------------------------------------------------------------------

    @torch.inference_mode()
    def verify_tree(self, ids: list[int], tree: Tree) -> torch.Tensor:
        """[1 + n, V] logits after ids[-1] (the root) and after each of the tree's n nodes, in one
        pass that feeds whatever of ids is not cached and then the nodes (see tree.slot_inputs)."""
        self.settle(ids)
        keep = min(common_prefix(self.ids, ids), len(ids) - 1)  # the root is fed: its logits are wanted
        self.crop(keep)
        return self._tree_pass(ids[keep:], list(zip(tree.tokens, tree.parents)), len(tree) + 1)

    @torch.inference_mode()
    def extend_tree(self, ids: list[int], slots: list[tuple[int, int]]) -> torch.Tensor:
        """[len(slots), V] logits after each new slot (token, parent slot or ROOT; slots number on
        from those already cached), fed after ids and the slots before them. How a draft grows a
        tree a depth at a time: it reads ids with logits(ids, 1) first, which settles older slots."""
        if self.ids != list(ids):
            raise ValueError("extend_tree continues a tree after ids: read ids with logits(ids, 1) first")
        return self._tree_pass([], self.slots + list(slots), len(slots))

    def _tree_pass(self, tail: list[int], slots: list[tuple[int, int]], n: int) -> torch.Tensor:
        self._check_tree()
        fed = len(self.slots)
        inputs = slot_inputs(len(self.ids), tail, slots, fed, self.model.dtype, self.device)
        logits = self._forward(self.ids + tail + [token for token, _ in slots], n, input_ids=inputs.input_ids,
                               position_ids=inputs.position_ids, attention_mask=inputs.attention_mask)
        self.ids, self.slots = self.ids + tail, slots
        return logits

    def _forward(self, context: list[int], n: int, **inputs) -> torch.Tensor:
        """One pass over inputs after the cache; the [n, V] logits of its last n positions. With a
        short head, the model's body gives the hidden states and the head reads the context first."""
        if self.head is None:
            kwargs = {"logits_to_keep": n} if self._takes_logits_to_keep else {}
            out = self.model(**inputs, past_key_values=self.cache, use_cache=True, **kwargs)
            self.cache = out.past_key_values
            return out.logits[0, -n:, : self.vocab_size]
        self.head.read(context)
        out = self.model.base_model(**inputs, past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        return self.head(out.last_hidden_state[0, -n:])[:, : self.vocab_size]

    @property
    def keeps_every_position(self) -> bool:
        """Whether every layer keeps every position fed, so the cache can roll back to any point. A
        sliding layer cannot go back past its last rollback (crop): only committed positions may be
        rolled back to, which rules out a draft's staged passes (drafters/staged.py), whose guesses
        roll back to uncommitted draft tokens before the round's own rollback reaches further."""
        return all(type(layer) is DynamicLayer for layer in self.cache.layers)

    @property
    def takes_trees(self) -> bool:
        """Whether verify_tree and extend_tree work on this model (see _check_tree)."""
        try:
            self._check_tree()
        except UnsupportedModel:
            return False
        return True

    def _check_tree(self) -> None:
        """Trees need a mask the attention honours and a cache whose positions can be gathered. ALiBi
        models (Bloom, Falcon with alibi, MPT) build their position biases from a 2D padding mask, so a
        tree's 4D mask, which says which node sees which, has no place in them."""
        config = self.model.config
        if getattr(config, "alibi", False) or getattr(config, "model_type", "") in ("bloom", "mpt"):
            raise UnsupportedModel(f"{type(self.model).__name__} uses ALiBi position biases, built from a 2D "
                                   "attention mask, so it cannot read a tree's 4D mask; use a chain drafter")
        impl = getattr(config, "_attn_implementation", None)
        if impl not in TREE_ATTENTION:
            raise UnsupportedModel(f"{type(self.model).__name__} uses {impl!r} attention, which ignores a tree's "
                                   f"4D mask; load it with attn_implementation in {TREE_ATTENTION} for tree drafting")
        others = sorted({type(layer).__name__ for layer in self.cache.layers if type(layer) is not DynamicLayer})
        if others:
            raise UnsupportedModel(f"{type(self.model).__name__} has {', '.join(others)} layers (a sliding window), "
                                   "whose cache cannot keep one branch of a tree; use a chain drafter")

    def settle(self, ids: list[int]) -> None:
        """Keep the cached slots that ids go on with (the accepted path: first matching child at
        each depth, as siblings with equal tokens hold equal keys and values), drop the rest."""
        if not self.slots:
            return
        committed, path, node = len(self.ids), [], ROOT
        if ids[:committed] == self.ids:
            for token in ids[committed:]:
                node = next((s for s, (t, parent) in enumerate(self.slots) if parent == node and t == token), None)
                if node is None:
                    break
                path.append(node)
        gather_cache(self.cache, list(range(committed)) + [committed + s for s in path])
        self.ids = self.ids + [self.slots[s][0] for s in path]
        self.slots = []

    def _drop_slots(self) -> None:
        if self.slots:
            self.cache.crop(-len(self.slots))
            self.slots = []
