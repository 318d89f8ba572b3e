"""A causal LM that runs only some of another's decoder layers: the draft of self-speculation.

The view is a shallow copy of the model whose layer list holds the chosen layers, then the model's
own final norm and LM head. Every weight is shared, none copied, so self-speculation adds no second
model to memory. Each chosen layer is renumbered to its place in the view (its attention writes the
view's KV cache at that index), and the view's config says how many layers it has (and their kinds,
for models that mix full and sliding-window attention), so the model's own forward runs it as it is.
"""
from __future__ import annotations

import copy
import re
from typing import Sequence

import torch


def layer_view(model: torch.nn.Module, layers: Sequence[int]) -> torch.nn.Module:
    """model restricted to `layers` (indices into its decoder layers, increasing)."""
    inner = getattr(model, model.base_model_prefix)
    own = decoder_layers(model)
    chosen = check_layers(layers, len(own))
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = len(chosen)
    if getattr(config, "layer_types", None) is not None:
        config.layer_types = [config.layer_types[i] for i in chosen]
    inner_view = _shallow(inner, hooks=False)
    inner_view.layers = torch.nn.ModuleList(_renumbered(own[i], j) for j, i in enumerate(chosen))
    inner_view.config = config
    view = _shallow(model, hooks=False)
    setattr(view, model.base_model_prefix, inner_view)
    view.config = config
    return view


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    layers = getattr(getattr(model, getattr(model, "base_model_prefix", ""), None), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(f"{type(model).__name__} keeps no decoder layer list at .model.layers, "
                         "so it cannot draft for itself by skipping layers")
    return layers


def check_layers(layers: Sequence[int], n_layers: int) -> tuple[int, ...]:
    chosen = tuple(layers)
    if not chosen:
        raise ValueError(f"self-speculation needs at least one layer (of the model's {n_layers}); "
                         "leave the layers unset for the default, the first half")
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_layers for i in chosen):
        raise ValueError(f"layers must be integers in [0, {n_layers - 1}] (the model has {n_layers}), "
                         f"got {_brief(chosen)}")
    if list(chosen) != sorted(set(chosen)):
        raise ValueError(f"layers must be increasing and distinct, got {_brief(chosen)}")
    if len(chosen) == n_layers:
        raise ValueError(f"a draft from all {n_layers} layers is the target itself; skip at least one layer")
    return chosen


def _brief(layers: tuple) -> str:
    return str(list(layers)) if len(layers) <= 12 else f"{list(layers[:12])[:-1]}, ... ({len(layers)} entries)]"


def first_layers(n_layers: int) -> tuple[int, ...]:
    """The default draft: the first half of the layers (early exit at mid-depth)."""
    return tuple(range(max(1, n_layers // 2)))


def parse_layers(text: str, n_layers: int) -> tuple[int, ...]:
    """'0-7,10,12-13' -> (0, ..., 7, 10, 12, 13); an empty text is the default first half."""
    text = text.strip()
    if not text:
        return check_layers(first_layers(n_layers), n_layers)
    chosen: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ValueError(f"cannot read layers {text!r}: write indices and ranges like '0-7,10,12-13'")
        start, end = int(match[1]), int(match[2] or match[1])
        if end < start or end >= n_layers:  # checked before expanding: '0-10**12' must not build a list
            raise ValueError(f"layer range {part.strip()!r} must run upwards within [0, {n_layers - 1}] "
                             f"(the model has {n_layers} layers)")
        chosen += range(start, end + 1)
    return check_layers(sorted(set(chosen)), n_layers)


def _renumbered(layer: torch.nn.Module, index: int) -> torch.nn.Module:
    """A shallow copy of a decoder layer whose modules that carry a layer_idx (its attention) carry
    `index`: the layer's slot in the view's cache. Weights stay shared."""
    clone = _shallow(layer)
    for name, child in layer.named_children():
        if hasattr(child, "layer_idx") or any(hasattr(m, "layer_idx") for m in child.modules()):
            setattr(clone, name, _renumbered(child, index))
    if hasattr(layer, "layer_idx"):
        clone.layer_idx = index
    return clone


_HOOKS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
          "_forward_pre_hooks_with_kwargs")


def _shallow(module: torch.nn.Module, hooks: bool = True) -> torch.nn.Module:
    """A copy that shares parameters and buffers but owns its submodule table, so replacing a child
    of the copy leaves the original untouched. hooks=False gives it no forward hooks: a hook counting
    the target's passes must not count the draft's (the layers inside keep theirs, e.g. device maps)."""
    clone = copy.copy(module)
    clone._modules = dict(module._modules)
    if not hooks:
        for name in _HOOKS:
            if hasattr(module, name):
                setattr(clone, name, type(getattr(module, name))())
    return clone
