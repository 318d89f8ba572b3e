"""A draft's LM head over part of the vocabulary: the first ROWS token ids and every id of the context.

Why. A draft step on a CPU reads every weight once, and a large vocabulary's head is a large share of
a small draft: Qwen2.5-0.5B's tied head is 151,936 x 896, 136 M of its 494 M weights (28%). Measured
on the 2-core AMD EPYC (docs/bench-auto/short_head.txt, medians of three), a decode step of that
draft costs 76.0 ms with the whole head and 68.1 ms with its first 65,536 rows in fp32 on the fast
engine; 33.3 ms and 30.4 ms in int8. Over a 21-turn session (docs/bench-auto/short_head_ab.py),
auto ran 1.10-1.12x as fast with the short head as with the whole one on the fp32 draft, and
0.99-1.03x on the int8 one, whose step is a smaller share of a round. FR-Spec (Zhao et al., 2025,
arXiv 2502.14856, "Accelerating Large-Vocabulary Language Models via Frequency-Ranked Speculative
Sampling") cuts a draft's head to a corpus's most frequent tokens in the same way; SGLang's EAGLE
drafts take such a list (--speculative-token-map).

Which rows. Without a corpus, the ids' order: a byte-level BPE numbers its tokens in merge order, and
each merge joins the pair then most frequent in the tokenizer's training text, so low ids are common
tokens. Over the Spec-Bench-format sample's 26 first turns (the int8 draft's greedy answers, 1,967
tokens) 2.4% of answer tokens lie at or above 65,536, and 0.7% when every id already in the context
is kept as well (the prompt's names and rare words, the answer's own repeats). So the head keeps
both: the first ROWS rows, as one layer of the whole head's kind (packed where it was packed, int8
where it was int8), and the rows of the context's other ids, gathered as they first appear.

Exactness. Outside the kept ids the draft's logits are -inf, so its distribution q is the softmax
over the kept ids and zero elsewhere, and a greedy draft is the argmax over them. The target checks
whatever the draft proposes against the q it was drawn from (verify.py, tree_verify.py), so the
output is the target's, greedy or sampled, whichever rows are kept; only acceptance can change. A
greedy chain loses a token only where the target's next token is not kept and the whole head would
have drafted it; a sampled token is accepted with probability sum_x min(p(x), q(x)), which the cut
lowers by at most the mass the whole head put outside the kept ids.

When not. A context whose tokens often lie above the cut (Chinese: Qwen's CJK words sit around id
100,000) would miss most of them, so once more than FREE_OUTSIDE distinct ids of the context are
not among the first ROWS, and more than MAX_OUTSIDE_SHARE of its length, the draft reads the whole
head until the next request. A vocabulary under 2 ROWS (SmolLM2's 49,152) keeps the whole head: the
cut would save too little. So does a model whose logits are more than a projection of its last
hidden state (Gemma's soft-capping, Cohere's scale): only PLAIN_HEADS' model types are cut.
"""
from __future__ import annotations

import weakref
from typing import Sequence

import torch
from torch import nn
from torch.ao.nn.quantized import dynamic as quantized_dynamic


ROWS = 65_536
FREE_OUTSIDE = 8  # the chat template's special tokens and a few rare words cost nothing to gather
MAX_OUTSIDE_SHARE = 0.05
# Model types whose causal LM computes logits = lm_head(last hidden state) and nothing more.
PLAIN_HEADS = ("llama", "qwen2", "qwen3", "mistral")
# Each head's rows, read once and shared by every drafter on it (HeadRows.of): a drafter is made per
# request, and reading an int8 head's weights unpacks all of them (1 s for the Qwen 0.5B draft's head
# on the 2-core host, 3.3 s with the first rows' repack). Keyed weakly by the head, so an unloaded
# model takes its rows along.
_HEAD_ROWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class ShortHead:
    """The head's first rows.count rows and the rows of the context's other ids; -inf elsewhere."""

    def __init__(self, head: nn.Module, rows: "HeadRows"):
        self.head, self.rows = head, rows
        self.width = head.out_features
        self.start_request()

    @classmethod
    def of(cls, model: nn.Module, rows: int | None = ROWS) -> "ShortHead | None":
        """The short head of model's LM head, or None where it keeps the whole one (module docstring)."""
        head = model.get_output_embeddings()
        if (rows is None or getattr(model.config, "model_type", None) not in PLAIN_HEADS
                or head is None or head.out_features < 2 * rows):
            return None
        by_count = _HEAD_ROWS.setdefault(head, {})
        if rows not in by_count:
            by_count[rows] = HeadRows.of(head, rows)
        return None if by_count[rows] is None else cls(head, by_count[rows])

    def start_request(self) -> None:
        self.outside: list[int] = []  # ids at or above rows.count seen in this request's context, in order
        self.outside_layer: nn.Module | None = None  # the head's rows for them, as a layer of its kind
        self.outside_index: torch.Tensor | None = None  # where that layer's logits go
        self.whole = False

    def read(self, ids: Sequence[int]) -> None:
        """Take the context's ids in: gather the rows of those not kept yet, or go whole for the rest
        of the request where too many are missing."""
        if self.whole:
            return
        known = set(self.outside)  # (a pass over 2,000 ids costs ~0.1 ms, a draft step ~30)
        new = sorted({i for i in ids if i >= self.rows.count and i not in known})
        if not new:
            return
        if len(self.outside) + len(new) > FREE_OUTSIDE + MAX_OUTSIDE_SHARE * len(ids):
            self.whole = True
            return
        self.outside += new
        self.outside_layer = self.rows.gather(self.outside)
        self.outside_index = torch.tensor(self.outside, device=self.rows.weight.device)

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., V] logits for hidden states [..., H]: the kept ids' as the whole head computes them,
        -inf for the rest."""
        if self.whole:
            return self.head(hidden)
        logits = hidden.new_full((*hidden.shape[:-1], self.width), float("-inf"))
        logits[..., : self.rows.count] = self.rows.first(hidden)
        if self.outside:
            logits[..., self.outside_index] = self.outside_layer(hidden)
        return logits


class HeadRows:
    """A head's rows as layers of its kind: its first `count` rows (first, built once) and any few
    others (gather, per request). A dense head's weights are shared, not copied. An int8 head's
    values are unpacked once and kept (one byte a weight: 136 MB for the Qwen 0.5B draft's head), as
    reading rows from its packed weight unpacks all of them each time."""

    def __init__(self, first: nn.Module, weight: torch.Tensor, bias: torch.Tensor | None, count: int,
                 scales: torch.Tensor | None = None, zero_points: torch.Tensor | None = None):
        self.first, self.weight, self.bias, self.count = first, weight, bias, count
        self.scales, self.zero_points = scales, zero_points  # an int8 head's, per row; weight its int8 values

    @classmethod
    def of(cls, head: nn.Module, count: int) -> "HeadRows | None":
        """head's rows, or None for a kind of head not known here."""
        packed = hasattr(head, "packed") and hasattr(head, "padded_rows")  # models/fast.py's FastLinear
        if packed or type(head) is nn.Linear:
            weight, bias = head.weight.detach(), None if head.bias is None else head.bias.detach()
            first = _dense(weight[:count], None if bias is None else bias[:count])
            if packed:  # a packed copy of those rows, used at the widths the whole head's is; by its own class,
                first = type(head)(first, head.dense_rows, head.padded_rows)  # as the engine imports no loader
            return cls(first, weight, bias, count)
        if not isinstance(head, quantized_dynamic.Linear):
            return None
        weight, bias = head.weight(), head.bias()  # (unpacks the whole head: once)
        if weight.qscheme() != torch.per_channel_affine:
            return None
        first = _quantized(weight[:count], None if bias is None else bias[:count].clone())
        return cls(first, weight.int_repr(), bias, count,
                   weight.q_per_channel_scales(), weight.q_per_channel_zero_points())

    def gather(self, ids: list[int]) -> nn.Module:
        """A layer of the head's kind over the given output rows (copies: ids are a few)."""
        index = torch.tensor(ids)
        bias = None if self.bias is None else self.bias[index].clone()
        if self.scales is None:
            return _dense(self.weight[index], bias)
        # Each row's int8 values times its scale, quantized again on that scale: the same int8 values,
        # so the layer computes what the whole head does for these ids, activations rounded alike.
        scales, zero_points = self.scales[index], self.zero_points[index]
        rows = ((self.weight[index].double() - zero_points[:, None]) * scales[:, None]).float()  # (scales are float64)
        return _quantized(torch.quantize_per_channel(rows, scales, zero_points, 0, torch.qint8), bias)


def _dense(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device="meta")
    layer.weight = nn.Parameter(weight, requires_grad=False)
    if bias is not None:
        layer.bias = nn.Parameter(bias, requires_grad=False)
    return layer


def _quantized(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Module:
    layer = quantized_dynamic.Linear(weight.shape[1], weight.shape[0], dtype=torch.qint8)
    layer.set_weight_bias(weight, bias)
    return layer
