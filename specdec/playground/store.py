"""Models kept loaded between requests, and the lock that serialises all device work.

A Pair holds one KV cache per lane, so two requests must never run on it at once. The queue's
concurrency limit already gives that; DEVICE_LOCK makes it hold even in the window where a cancelled
run's last round is still finishing on a worker thread while the next run starts.
"""
from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import torch

from ..engine.pair import Pair
from ..engine.loaded import Loaded, TokenizerMismatch, check_tokenizers
from ..models.loading import HUB_UNREACHABLE, cached_on_disk, costs_file, hub_reachable, load_model, unknown_model

DEVICE_LOCK = threading.RLock()
Log = Callable[[str], None]


class LoadError(RuntimeError):
    """A model could not be loaded; the message says which and why."""


def free_device_memory() -> None:
    """Collect dropped tensors and hand cached CUDA blocks back to the driver."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def is_out_of_memory(error: BaseException) -> bool:
    return isinstance(error, torch.OutOfMemoryError) or "CUDA out of memory" in str(error)


def short(error: BaseException, limit: int = 400) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hub_id(spec: str) -> bool:
    """A spec the loader will fetch from the Hub (not an offline name, folder or file)."""
    from .limits import HUB_ID, OFFLINE_NAMES

    return spec not in OFFLINE_NAMES and HUB_ID.match(spec) is not None and not Path(spec).exists()


class ModelStore:
    """Loaded models by spec, least recently used first, at most max_models of them.

    A model is evicted only after another loaded successfully, so a failed load leaves every model
    loaded before it usable (the price is a moment with one model too many in memory).
    """

    def __init__(self, max_models: int = 3, device=None, dtype=None, loader: Callable[..., Loaded] = load_model,
                 hub_probe: Callable[[], bool] = hub_reachable):
        self.max_models = max(2, max_models)  # a pair needs two
        self.device, self.dtype, self._loader, self._hub_probe = device, dtype, loader, hub_probe
        self._models: OrderedDict[str, Loaded] = OrderedDict()
        self._pairs: dict[tuple[str, str | None], Pair] = {}
        self.warmed: set[tuple] = set()

    def loaded(self) -> list[str]:
        return list(self._models)

    def is_loaded(self, spec: str) -> bool:
        return spec in self._models

    def same_tokenizer(self, target: str, draft: str) -> bool | None:
        """Whether a draft speaks the target's token ids, from what is loaded already (None when either
        is not loaded: this never loads, so the Auto button can ask it at no cost)."""
        pair = self._pairs.get((target, draft))
        if pair is not None:
            return pair.tokenizer_mismatch is None
        target_model, draft_model = self._models.get(target), self._models.get(draft)
        if target_model is None or draft_model is None:
            return None
        try:
            check_tokenizers(target_model.tokenizer, draft_model.tokenizer)
        except TokenizerMismatch:
            return False
        return True

    def model(self, spec: str, log: Log, keep: tuple[str, ...] = ()) -> Loaded:
        with DEVICE_LOCK:
            if spec in self._models:
                self._models.move_to_end(spec)
                return self._models[spec]
            if hub_id(spec) and not cached_on_disk(spec) and not self._hub_probe():
                raise LoadError(unknown_model(spec, HUB_UNREACHABLE))
            try:
                loaded = self._loader(spec, device=self.device, dtype=self.dtype, trust_remote_code=False, log=log)
            except BaseException as error:
                free_device_memory()  # whatever a half-done load left on the device
                if is_out_of_memory(error) or not isinstance(error, Exception):
                    raise
                raise LoadError(f"could not load model {spec!r}: {short(error)}") from error
            self._models[spec] = loaded
            self._evict(keep=(spec, *keep))
            return loaded

    def pair(self, target: str, draft: str | None, log: Log) -> Pair:
        """The Pair for (target, draft), loading what is missing; raises TokenizerMismatch."""
        with DEVICE_LOCK:
            key = (target, draft)
            if key in self._pairs and all(s in self._models for s in key if s):
                for spec in (s for s in key if s):
                    self._models.move_to_end(spec)
                return self._pairs[key]
            target_model = self.model(target, log, keep=(draft,) if draft else ())
            draft_model = self.model(draft, log, keep=(target,)) if draft else None
            pair = Pair(target_model, draft_model)
            # auto starts from what earlier processes learned on this pair and device (a restarted
            # Space included), as the CLI and the bench do, and leaves what it learns for the next.
            pair.remember_costs(costs_file(target_model, draft_model))
            self._pairs[key] = pair
            return pair

    def _evict(self, keep: tuple[str, ...]) -> None:
        dropped = False
        while len(self._models) > self.max_models:
            victim = next((s for s in self._models if s not in keep), None)
            if victim is None:
                break
            del self._models[victim]
            dropped = True
        if dropped:
            self._pairs = {k: p for k, p in self._pairs.items() if all(s in self._models for s in k if s)}
            self.warmed = {w for w in self.warmed if all(s in self._models for s in w[:2] if s)}
            free_device_memory()
