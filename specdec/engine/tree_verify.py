"""Token trees: many draft continuations verified by one target pass (SpecInfer, Miao et al. 2023;
Sequoia, Chen et al. 2024; EAGLE-2, Li et al. 2024).

A tree's nodes are drafted tokens; node -1 is the root, the last committed token. The target reads
the root and every node in one pass, each query seeing the cached prefix, its ancestors and itself,
so query j = i + 1 returns the target's distribution after the path root -> i. Acceptance then walks
down from the root (greedy: the child equal to the argmax; sampled: multi-candidate rejection
sampling, exact for the target), and the cache keeps the prefix, the root and the accepted path.

Everything here is pure (random draws passed in) except `gather_cache`, which rewrites a cache.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple, Sequence

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from .sampling import sample_from
from .verify import residual

ROOT = -1
DRAWS = ("iid", "without-replacement", "top")


@dataclass(frozen=True)
class Tree:
    """Nodes in a topological order (a parent before its children); siblings in the order they
    were drawn, which is the order acceptance tries them.

    q[i] is the distribution node i's sibling group was drawn from: the draft's distribution at
    node i's parent. Siblings therefore share a row (checked). `draws` says how a group was drawn
    from it:
      "iid"                  independently, with replacement (siblings may repeat);
      "without-replacement"  one after another, each from q with the earlier siblings removed;
      "top"                  deterministically (top-b, prompt lookup): q is one-hot on each token,
                             so no q is stored.
    A tree must not depend on the uniforms acceptance uses. "top" is then exact however the tree
    was built (see sibling_q), so it also serves a sampled tree whose q is unknown, at a lower
    acceptance; "iid" and "without-replacement" are exact only if each group really was drawn so.
    """

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    q: torch.Tensor | None = None  # [len(tokens), V]
    draws: str = "top"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", tuple(int(t) for t in self.tokens))
        object.__setattr__(self, "parents", tuple(int(p) for p in self.parents))
        n = len(self.tokens)
        if len(self.parents) != n:
            raise ValueError(f"a tree needs one parent per token, got {n} tokens, {len(self.parents)} parents")
        for node, parent in enumerate(self.parents):
            if not ROOT <= parent < node:
                raise ValueError(f"node {node}'s parent must be -1 (the root) or an earlier node, got "
                                 f"{parent}: nodes must be in a topological order")
        if any(t < 0 for t in self.tokens):
            raise ValueError(f"token ids must be >= 0, got {self.tokens}")
        if self.draws not in DRAWS:
            raise ValueError(f"draws must be one of {DRAWS}, got {self.draws!r}")
        self._check_q()

    def _check_q(self) -> None:
        if self.draws == "top":
            if self.q is not None:
                raise ValueError('a "top" tree is drawn deterministically: its q is one-hot, pass q=None')
            return
        n = len(self.tokens)
        if self.q is None or self.q.ndim != 2 or self.q.shape[0] != n:
            shape = None if self.q is None else tuple(self.q.shape)
            raise ValueError(f'a tree with {self.draws!r} draws needs q of shape [{n}, V], got {shape}')
        for node in range(-1, n):
            group = self.children(node)
            if any(not torch.equal(self.q[c], self.q[group[0]]) for c in group[1:]):
                raise ValueError(f"siblings {group} (children of {node}) must share their q row: "
                                 "they were drawn from the same distribution")
            if self.draws == "without-replacement" and len({self.tokens[c] for c in group}) < len(group):
                raise ValueError(f"siblings {group} drawn without replacement repeat a token")

    def __len__(self) -> int:
        return len(self.tokens)

    @cached_property
    def _depths(self) -> tuple[int, ...]:
        depths: list[int] = []
        for parent in self.parents:
            depths.append(1 if parent == ROOT else depths[parent] + 1)
        return tuple(depths)

    @cached_property
    def _children(self) -> dict[int, tuple[int, ...]]:
        children: dict[int, list[int]] = {ROOT: []}
        for node, parent in enumerate(self.parents):
            children.setdefault(parent, []).append(node)
        return {node: tuple(c) for node, c in children.items()}

    def depth(self, node: int) -> int:
        """0 for the root, 1 for its children, ..."""
        return 0 if node == ROOT else self._depths[node]

    def children(self, node: int) -> tuple[int, ...]:
        return self._children.get(node, ())

    def path(self, node: int) -> tuple[int, ...]:
        """Node indices from the root's child down to node (empty for the root)."""
        path = []
        while node != ROOT:
            path.append(node)
            node = self.parents[node]
        return tuple(reversed(path))


def merge_prefixes(branches: Sequence[Sequence[int]], budget: int | None = None) -> Tree:
    """One deterministic tree holding every branch, shared prefixes merged (a trie). Nodes are
    numbered as first met, so the order is topological and earlier branches' children come first.
    With a budget, nodes stop being added once there are that many: a later branch may then be cut
    short or left out, never an earlier one."""
    tokens: list[int] = []
    parents: list[int] = []
    index: dict[tuple[int, int], int] = {}  # (parent, token) -> node
    for branch in branches:
        if budget is not None and len(tokens) >= budget:
            break  # full: later branches could only walk nodes already there
        node = ROOT
        for token in branch:
            key = (node, int(token))
            if key not in index:
                if budget is not None and len(tokens) >= budget:
                    break
                index[key] = len(tokens)
                tokens.append(int(token))
                parents.append(node)
            node = index[key]
    return Tree(tuple(tokens), tuple(parents))


# --- the target pass -----------------------------------------------------------------------------
#
# How the mask reaches attention (transformers 5.23). LlamaModel / Qwen2Model call
# `create_causal_mask`, whose `_preprocess_mask_arguments` returns any 4D mask as-is, before looking
# at the cache or the attention implementation; `position_ids`, when given, are used for the rotary
# embedding instead of arange(cache length). So a custom 4D mask plus explicit position ids is the
# whole tree-attention interface. What each implementation then does with it:
#   eager  adds it to the scores (`attn_weights + attention_mask`): it must be additive. A boolean
#          mask is added as 1.0 / 0.0 and masks nothing, silently (tests/engine/test_tree.py shows it).
#   sdpa   passes it to torch's scaled_dot_product_attention, which takes boolean (True = attend) or
#          additive float masks alike. With a mask, transformers repeats the KV heads instead of
#          using enable_gqa, and on CUDA torch cannot pick its flash kernel (no arbitrary masks).
#   flash_attention_2/3, paged  read the mask as a 2D padding mask: a tree cannot be expressed.
#   flex   would add a tensor mask to the scores as a score_mod, with no block sparsity; on this
#          CPU build (torch 2.13) the forward aborts the process (double free), so it is not offered.
# We build an additive mask (0 visible, finfo(dtype).min hidden, like transformers' own eager masks)
# because it is right under both eager and sdpa, and pick sdpa for speed with eager as the
# reference the tests compare. dtype should be the model's: every query sees at least itself, so
# min + score overflowing to -inf in half precision is harmless (no all-masked row, no NaN).
# Sliding-window layers would get this mask without their window, which is only right while the
# whole context fits the window; `gather_cache` refuses such caches anyway.
TREE_ATTENTION = ("eager", "sdpa")


class TreeInputs(NamedTuple):
    input_ids: torch.Tensor  # [1, 1 + n]: the root then the nodes
    position_ids: torch.Tensor  # [1, 1 + n]: prefix_len + depth
    attention_mask: torch.Tensor  # [1, 1, 1 + n, prefix_len + 1 + n], additive


def check_tree_attention(config) -> None:
    """ValueError unless the model's attention implementation honours a 4D tree mask."""
    impl = getattr(config, "_attn_implementation", None)
    if impl not in TREE_ATTENTION:
        raise ValueError(f"attention implementation {impl!r} ignores a 4D tree mask; "
                         f"use one of {TREE_ATTENTION}")


def tree_inputs(prefix_len: int, tree: Tree, last_token: int, dtype: torch.dtype = torch.float32,
                device: torch.device | str | None = None) -> TreeInputs:
    """Inputs of one target pass over the root (the last committed token, at position prefix_len)
    and the tree's nodes, with a KV cache already holding the prefix_len positions before it."""
    if prefix_len < 0:
        raise ValueError(f"prefix_len must be >= 0, got {prefix_len}")
    return slot_inputs(prefix_len, [last_token], list(zip(tree.tokens, tree.parents)), 0, dtype, device)


def additive(seen: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[q, kv] bool visibility -> [1, 1, q, kv] additive mask: 0 visible, finfo(dtype).min hidden."""
    zero = torch.zeros((), dtype=dtype, device=seen.device)
    return torch.where(seen, zero, torch.finfo(dtype).min)[None, None]


def slot_inputs(committed: int, tail: Sequence[int], slots: Sequence[tuple[int, int]], fed: int,
                dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> TreeInputs:
    """Inputs of one pass that may mix committed tokens and tree nodes, as a cache that holds
    branches feeds them (kvcache.CachedModel). The cache holds `committed` committed positions and
    then slots[:fed]; this pass feeds `tail` (committed tokens not yet cached; only when no slot is
    cached) and then slots[fed:]. A slot is (token, parent slot or ROOT), parents before children;
    ROOT is the last committed token, at position committed + len(tail) - 1.

    Tail tokens are causal among themselves; a slot sees every committed position, its ancestor
    slots and itself, at position (last committed) + depth. tree_inputs is the case fed = 0 with a
    one-token tail; a draft growing its tree a depth at a time is the case tail = ()."""
    tail, new = list(tail), slots[fed:]
    if tail and fed:
        raise ValueError("committed tokens cannot follow cached tree slots")
    if not tail and committed == 0:
        raise ValueError("a tree needs a committed root token before it")
    root = committed + len(tail) - 1
    depths: list[int] = []
    for token, parent in slots:
        if not ROOT <= parent < len(depths):
            raise ValueError(f"slot {len(depths)}'s parent must be ROOT or an earlier slot, got {parent}")
        depths.append(1 if parent == ROOT else depths[parent] + 1)
    kv = committed + fed + len(tail) + len(new)
    # Rows parent first: a slot sees what its parent sees, plus itself (O(slots) row copies).
    base = torch.zeros(kv, dtype=torch.bool)
    base[: committed + (len(tail) if not fed else 0)] = True  # every committed position, tail included
    rows = torch.zeros(len(slots), kv, dtype=torch.bool)
    for slot, (_, parent) in enumerate(slots):
        rows[slot] = base if parent == ROOT else rows[parent]
        rows[slot, slot + committed if slot < fed else committed + len(tail) + slot] = True
    causal = torch.ones(len(tail), len(tail), dtype=torch.bool).tril()
    tail_rows = torch.cat([torch.ones(len(tail), committed, dtype=torch.bool), causal,
                           torch.zeros(len(tail), kv - committed - len(tail), dtype=torch.bool)], dim=1)
    seen = torch.cat([tail_rows, rows[fed:]])
    ids = tail + [token for token, _ in new]
    positions = list(range(committed, committed + len(tail))) + [root + depths[s] for s in range(fed, len(slots))]
    as_tensor = lambda x: torch.tensor([x], dtype=torch.long, device=device)  # noqa: E731
    return TreeInputs(as_tensor(ids), as_tensor(positions), additive(seen.to(device), dtype))


# --- acceptance ----------------------------------------------------------------------------------


class TreeVerdict(NamedTuple):
    path: tuple[int, ...]  # accepted node indices, root's child first (empty: none accepted)
    token: int  # the target's token after them: a correction, or the bonus after an accepted leaf


def accept_greedy(tree: Tree, target_argmax: Sequence[int] | torch.Tensor) -> TreeVerdict:
    """target_argmax[j] is the target's argmax at query j (j = 0 the root, j = i + 1 node i).
    Descend into the child equal to the argmax while there is one (the first, if siblings repeat)."""
    argmax = target_argmax.tolist() if isinstance(target_argmax, torch.Tensor) else list(target_argmax)
    if len(argmax) != len(tree) + 1:
        raise ValueError(f"need {len(tree) + 1} argmaxes (root + nodes), got {len(argmax)}")
    path, node = [], ROOT
    while True:
        match = [c for c in tree.children(node) if tree.tokens[c] == argmax[node + 1]]
        if not match:
            return TreeVerdict(tuple(path), int(argmax[node + 1]))
        node = match[0]
        path.append(node)


def sibling_q(tree: Tree, node: int, tried: Sequence[int], like: torch.Tensor) -> torch.Tensor:
    """q_i: the distribution node's token was drawn from, given that the siblings before it
    (tokens `tried`) were drawn and rejected. A sampled q_i must be exactly that (see accept_sampled).

    iid: every sibling is a fresh draw from the parent's q, whatever came before: q.
    without replacement: the i-th sibling is drawn from q with the earlier siblings' tokens removed,
      renormalised (EAGLE #74); plain q there is no longer the distribution x_i came from, and the
      output drifts from the target (the tests measure it).
    top: the siblings are fixed once the parent is, so each proposal is certain: one-hot, and the
      rule reduces to "accept x with probability r(x), else drop x from r". That is exact for any
      given x, P(y) = [x = y] r(x) + (1 - r(x)) r(y) [y != x] / (1 - r(x)) = r(y), so it needs no
      knowledge of how x came about; a true sampled q only raises acceptance (min(r, q) >= r q).
      The draft's softmax probability of a top-k token is not the probability it was proposed
      with: EAGLE issues #93, #110 and #221 are this question, and EAGLE-2's q(x) = 1 is right.
    """
    if tree.draws == "top":
        q = torch.zeros_like(like)
        q[tree.tokens[node]] = 1.0
        return q
    q = tree.q[node].to(like)
    if tree.draws == "iid" or not tried:
        return q
    q = q.clone()
    q[list(tried)] = 0.0
    total = q.sum()
    return q / total if total > 0 else q


def accept_sampled(tree: Tree, p: torch.Tensor, u_accept: Sequence[float], u_final: float) -> TreeVerdict:
    """Multi-candidate recursive rejection sampling (SpecInfer, Miao et al. 2023, Algorithm 2, with
    the per-token rule of Chen et al. 2023 / Leviathan et al. 2023). Exact: the emitted tokens have
    the target's distribution whatever the tree's shape, given its draws and q truthfully declared.

    p: [1 + n, V] target distributions at each query (row 0 the root, row i + 1 node i), already
    temperature / top-k / top-p processed. Uniforms in [0, 1): u_accept[i] for node i, read only if
    node i is tried (n in all), and u_final for the one token drawn at the end.

    At a node, with r = p at its query, try its children x_1..x_m in order: accept x_i with probability
    min(1, r(x_i) / q_i(x_i)); on acceptance descend into x_i (r = p at x_i's query); on rejection
    r <- norm(max(r - q_i, 0)). One speculative step with draft q_i and target r emits exactly r
    (verify.py), with the rejection branch sampling its residual; here that residual is in turn
    realised by trying the next sibling against it, so by induction the group as a whole emits r,
    provided q_i is what x_i was really drawn from given the earlier siblings, or one-hot
    (sibling_q). An accepted child's subtree emits that child's p the same way. When every
    child is rejected (or there are none, as at an accepted leaf, where r is the leaf's p: the bonus)
    the token is drawn from r.
    """
    n = len(tree)
    if p.ndim != 2 or p.shape[0] != n + 1:
        raise ValueError(f"need p of shape [{n + 1}, V] (root + nodes), got {tuple(p.shape)}")
    if len(u_accept) != n:
        raise ValueError(f"need one accept uniform per node ({n}), got {len(u_accept)}")
    path, node = [], ROOT
    while True:
        r, tried, accepted = p[node + 1], [], None
        for child in tree.children(node):
            x = tree.tokens[child]
            if tree.draws == "top" and x in tried:
                continue  # a repeated deterministic proposal: r(x) is already 0, nothing to try
            q = sibling_q(tree, child, tried, r)
            # u < r/q written as u*q < r: no division, and a token r gives no mass is never kept.
            if u_accept[child] * q[x] < r[x]:
                accepted = child
                break
            r = residual(r, q)  # no mass left means r == q: a rounding accident, r is right
            tried.append(x)
        if accepted is None:
            return TreeVerdict(tuple(path), sample_from(r, u_final))
        path.append(accepted)
        node = accepted


# --- the cache after a tree pass ----------------------------------------------------------------


def accepted_positions(prefix_len: int, path: Sequence[int]) -> list[int]:
    """Cache positions to keep after a tree pass: the prefix, the root (at prefix_len) and the
    accepted nodes (node i sits at prefix_len + 1 + i). Increasing, since a path's nodes are."""
    return list(range(prefix_len + 1)) + [prefix_len + 1 + node for node in path]


def gather_cache(cache: DynamicCache, keep: Sequence[int]) -> None:
    """Rewrite the cache in place to hold only positions `keep` (increasing), in that order.

    The kept keys need no correction: each was computed at position id prefix_len + depth, which is
    exactly the index it lands on. Only full-attention DynamicLayers are handled: a sliding layer's
    positions are offsets into a window and its recorded past, which an index_select would corrupt.
    """
    if not isinstance(cache, DynamicCache):
        raise ValueError(f"gather_cache handles a DynamicCache, got {type(cache).__name__}")
    others = sorted({type(layer).__name__ for layer in cache.layers if type(layer) is not DynamicLayer})
    if others:
        raise ValueError(f"gather_cache handles full-attention DynamicLayer layers only, "
                         f"got {', '.join(others)}")
    length = cache.get_seq_length()
    keep = [int(k) for k in keep]
    if any(b <= a for a, b in zip(keep, keep[1:])) or (keep and not 0 <= keep[0] <= keep[-1] < length):
        raise ValueError(f"keep must be increasing positions in [0, {length}), got {keep}")
    contiguous = keep == list(range(len(keep)))  # root only, or a first-child chain: a crop, no copy
    for layer in cache.layers:
        if not layer.is_initialized or layer.keys.numel() == 0:
            continue  # a layer that never received states (KV sharing)
        if contiguous:
            layer.keys, layer.values = layer.keys[..., : len(keep), :], layer.values[..., : len(keep), :]
        else:
            # Out of place: the cache's tensors may be inference tensors, and update() copies the
            # whole cache with torch.cat at every forward anyway.
            index = torch.tensor(keep, dtype=torch.long, device=layer.keys.device)
            layer.keys = layer.keys.index_select(-2, index)
            layer.values = layer.values.index_select(-2, index)
