"""ZeroGPU support: with the `spaces` package, a run asks for a GPU for as long as its request
needs; without it (or off a ZeroGPU Space, where spaces.GPU does nothing) this is a no-op."""
from __future__ import annotations

import functools
import inspect
import math
from typing import Callable, Mapping


def duration_seconds(max_new_tokens, needs_load: bool, settings: Mapping[str, float]) -> int:
    """Seconds to ask for: a load allowance if a model is not in memory yet, plus a per-token
    allowance for both lanes (each generates up to max_new_tokens), clipped to the configured range.

    ZeroGPU calls this before the request is validated, so it never raises: anything that is not a
    token count gets the minimum, and validation then reports it inside the run."""
    tokens = _token_count(max_new_tokens)
    if tokens is None:
        return int(settings["min_seconds"])
    seconds = (settings["load_seconds"] if needs_load else 0) + 2 * tokens * settings["seconds_per_token"]
    # Clipped before rounding: 1e308 tokens is a float count whose seconds overflow to inf.
    return round(min(settings["max_seconds"], max(settings["min_seconds"], seconds)))


def _token_count(value) -> float | None:
    """value as a count >= 1, or None. float() of an int past 1e308 overflows; inf and NaN are no count."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        tokens = float(value)
    except OverflowError:
        return None
    return tokens if math.isfinite(tokens) and tokens >= 1 else None


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
