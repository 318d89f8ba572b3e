"""A causal LM that runs only some of another's decoder layers: the draft of self-speculation.

The view is a shallow copy of the model whose layer list holds the chosen layers, then the model's
own final norm and LM head. The list is wherever the architecture keeps it under its base model
(LAYER_PATHS): `.layers` (Llama, Qwen, Mistral, Gemma, Phi and most others), `.h` (GPT-2, GPT-J,
GPT-Neo, Falcon, Bloom, BigCode) or `.decoder.layers` (OPT); each module on the way is copied too.
Every weight is shared, none copied, so self-speculation adds no second model to memory. Each chosen
layer is renumbered to its place in the view (its attention writes the view's KV cache at that
index), and the view's config says how many layers it has (and their kinds, for models that mix
full and sliding-window attention), so the model's own forward runs it as it is.
"""
from __future__ import annotations

import copy
import re
from typing import Sequence

import torch


# Where architectures keep their decoder layers, under the base model (model.base_model_prefix).
LAYER_PATHS = (("layers",), ("h",), ("decoder", "layers"))


def layer_view(model: torch.nn.Module, layers: Sequence[int]) -> torch.nn.Module:
    """model restricted to `layers` (indices into its decoder layers, increasing)."""
    path = layer_path(model)
    own = _walk(model, path)
    chosen = check_layers(layers, len(own))
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = len(chosen)  # (GPT-2's n_layer, Falcon's, ...: an alias of it)
    if getattr(config, "layer_types", None) is not None:
        config.layer_types = [config.layer_types[i] for i in chosen]
    # Copy every module from the model down to the list's owner, then give the owner the chosen layers.
    copies = [_shallow(model, hooks=False)]
    for name in path[:-1]:
        copies.append(_shallow(getattr(copies[-1], name), hooks=False))
        setattr(copies[-2], name, copies[-1])
    setattr(copies[-1], path[-1], torch.nn.ModuleList(_renumbered(own[i], j) for j, i in enumerate(chosen)))
    for module in copies:
        if hasattr(module, "config"):
            module.config = config
    return copies[0]


def layer_path(model: torch.nn.Module) -> tuple[str, ...]:
    """Attribute names from the model to its decoder layer list: the base model, then LAYER_PATHS'."""
    base = getattr(model, "base_model_prefix", "")
    for path in LAYER_PATHS if base else ():
        if isinstance(_walk(model, (base, *path)), torch.nn.ModuleList):
            return (base, *path)
    where = " or ".join(".".join((base or "model", *p)) for p in LAYER_PATHS)
    raise ValueError(f"{type(model).__name__} keeps no decoder layer list at {where}, "
                     "so it cannot draft for itself by skipping layers")


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    return _walk(model, layer_path(model))


def _walk(module: object, path: Sequence[str]) -> object:
    for name in path:
        module = getattr(module, name, None)
    return module


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
    shown = ", ".join(map(repr, layers[:12]))
    return f"[{shown}]" if len(layers) <= 12 else f"[{shown}, ... ({len(layers)} entries)]"


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
