"""The single source of truth for the Hugging Face Space and for the app's limits.

README.md's front matter is this module's SPACE rendered as YAML (`python space_config.py` prints
it) and tests/test_space.py checks that the two agree. app.py reads the limits, the queue and the
ZeroGPU settings from here and nowhere else.
"""
from __future__ import annotations

import os

from specdec.playground.limits import Limits
from specdec.playground.presets import PRESETS, allowlist

# The Space's front matter, in the order it is written. Hugging Face's accepted values are checked
# by tests/test_space.py: the colours and sdk from the Spaces configuration reference, the hardware
# from huggingface_hub's SpaceHardware. a10g-large (24 GB) holds the largest preset pair in bf16
# (Llama-3.1-8B + Llama-3.2-1B, about 19 GB of weights); on ZeroGPU hardware the app asks for the
# GPU per request (specdec/zerogpu.py).
SPACE: dict[str, object] = {
    "title": "specdec",
    "emoji": "⚡",
    "colorFrom": "indigo",
    "colorTo": "green",
    "sdk": "gradio",
    "sdk_version": "6.31.0",
    "python_version": "3.11",
    "app_file": "app.py",
    "pinned": False,
    "suggested_hardware": "a10g-large",
    "short_description": "Speculative vs standard decoding, live and measured",
    "models": sorted({m for p in PRESETS for m in (p.target, p.draft) if m and "/" in m}),
    "tags": ["speculative-decoding", "llm", "inference"],
}

# Public mode: set SPECDEC_PUBLIC=1 (or run on a Space, which sets SPACE_ID) to restrict the models
# to the presets' and enforce PUBLIC_LIMITS. SPECDEC_PUBLIC=0 turns it off even on a Space.
PUBLIC_ENV = "SPECDEC_PUBLIC"

LOCAL_LIMITS = Limits(
    max_prompt_chars=32_000,
    max_prompt_tokens=4096,
    max_new_tokens=1024,
    k_max=16,
    temperature_max=2.0,
    seed_max=2**31 - 1,
    allowlist=None,
    allow_local_paths=True,
    allow_remote_code=False,
    tree_budget_max=256,
)

PUBLIC_LIMITS = Limits(
    max_prompt_chars=8_000,
    max_prompt_tokens=1024,
    max_new_tokens=256,
    k_max=12,
    temperature_max=2.0,
    seed_max=2**31 - 1,
    allowlist=allowlist(),
    allow_local_paths=False,
    allow_remote_code=False,
    tree_budget_max=64,  # a shared GPU: one verify pass over at most 64 tree nodes
)

QUEUE_MAX_SIZE = 16  # events waiting at once; more get a "queue is full" error
GPU_CONCURRENCY = 1  # runs touching a model at once, app-wide: one Pair's caches serve one request
MAX_LOADED_MODELS = 3  # least recently used models are dropped beyond this (after a successful load)
REPLAY_MAX_SECONDS = 30.0  # a replay longer than this is sped up to fit

# ZeroGPU: seconds asked per request = LOAD_SECONDS (if a model must be loaded) + SECONDS_PER_TOKEN
# for each token of both lanes, clipped to [MIN, MAX]. Shorter requests get a GPU sooner.
ZERO_GPU = {"min_seconds": 20, "max_seconds": 120, "load_seconds": 40, "seconds_per_token": 0.08}


def public_mode(environ=os.environ) -> bool:
    flag = environ.get(PUBLIC_ENV)
    if flag is not None:
        return flag.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(environ.get("SPACE_ID"))


def limits(environ=os.environ) -> Limits:
    return PUBLIC_LIMITS if public_mode(environ) else LOCAL_LIMITS


def _yaml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "".join(f"\n  - {_yaml_value(v)}" for v in value)
    text = str(value)
    # Versions and descriptions are quoted so YAML never reads them as numbers or mappings.
    return f'"{text}"' if any(c in text for c in ":#,[]{}") or text.replace(".", "").isdigit() else text


def front_matter() -> str:
    """README.md's YAML block, from SPACE."""
    lines = [f"{key}:{'' if isinstance(value, list) else ' '}{_yaml_value(value)}" for key, value in SPACE.items()]
    return "---\n" + "\n".join(lines) + "\n---\n"


if __name__ == "__main__":
    print(front_matter(), end="")
