"""ZeroGPU support: with the `spaces` package, a run asks for a GPU for as long as its request
needs; without it (or off a ZeroGPU Space, where spaces.GPU does nothing) this is a no-op."""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Mapping


def duration_seconds(max_new_tokens, needs_load: bool, settings: Mapping[str, float]) -> int:
    """Seconds to ask for: a load allowance if a model is not in memory yet, plus a per-token
    allowance for both lanes (each generates up to max_new_tokens), clipped to the configured range."""
    try:
        tokens = max(1, int(max_new_tokens))
    except (TypeError, ValueError):
        tokens = 1  # validation rejects it inside the run; ask for the minimum
    seconds = (settings["load_seconds"] if needs_load else 0) + 2 * tokens * settings["seconds_per_token"]
    return int(min(settings["max_seconds"], max(settings["min_seconds"], round(seconds))))


def gpu(duration: Callable[..., int]) -> Callable[[Callable], Callable]:
    """spaces.GPU(duration=duration) when spaces is installed, else the identity decorator.

    duration is called with the decorated function's arguments, so the request sets the time."""
    try:
        import spaces
    except ImportError:
        return lambda fn: fn

    def decorate(fn: Callable) -> Callable:
        wrapped = spaces.GPU(duration=duration)(fn)
        if inspect.isgeneratorfunction(fn) and not inspect.isgeneratorfunction(wrapped):
            # Gradio streams only what inspect calls a generator function.
            def stream(*args, **kwargs):
                yield from wrapped(*args, **kwargs)

            return functools.wraps(fn)(stream)
        return functools.wraps(fn)(wrapped)

    return decorate
