"""The app's input limits and the checks that run before any model work.

Every check raises InvalidInput with a message that names the input and the limit, so a user (or
an API client) can fix the request. Values arrive raw from the UI or the API (JSON numbers, strings,
None), so nothing here trusts a type.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..engine.config import MAX_TREE_BUDGET, TreeShape
from ..engine.drafters import DRAFTERS, needs_draft_model
from ..engine.policy import POLICIES
from ..engine.text import check_text
from .fields import COMPARE_FIELDS, NAMES, bind

OFFLINE_NAMES = ("embedded", "qwen-coder-1.5b", "qwen-coder-0.5b")
# A Hub repo id: an optional namespace, then a name; letters, digits, '-', '_', '.'; no '..'.
HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")
# The self drafter's layers, as typed: "0-7,10". Checked against the model's layer count only once
# it is loaded; before that, the text's length, characters and each index's size.
DRAFT_LAYERS_MAX_CHARS = 200
DRAFT_LAYERS_MAX_INDEX = 9999  # far past any model's depth, and small enough that no range is costly
_LAYER_PART = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


class InvalidInput(ValueError):
    """A request the app refuses before touching a model."""


@dataclass(frozen=True)
class Limits:
    max_prompt_chars: int
    max_prompt_tokens: int
    max_new_tokens: int
    k_max: int
    temperature_max: float
    seed_max: int
    allowlist: tuple[str, ...] | None  # None: any model id, folder or file
    allow_local_paths: bool
    allow_remote_code: bool
    # Nodes a tree drafter may ask the target to verify in one pass. The pass's cost grows with it, so
    # a shared Space caps it below the engine's own limit (MAX_TREE_BUDGET).
    tree_budget_max: int = MAX_TREE_BUDGET
    max_repeats: int = 5  # runs of one request (the verdict is their median): each costs a whole run

    def as_dict(self) -> dict:
        return {key: list(v) if isinstance(v, tuple) else v for key, v in self.__dict__.items()}


@dataclass(frozen=True)
class Checked:
    """A request that passed every check that needs no tokenizer."""

    prompt: str
    target: str
    draft: str | None
    drafter: str
    k: int
    policy: str  # fixed, heuristic or cost: the one name of how k moves, as engine.policy spells it
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int
    draft_layers: str | None = None  # the self drafter's layers as typed ("" = its default); None for others
    tree_budget: int = TreeShape.budget  # the tree drafters' shape; checked for every drafter, read by the tree ones
    tree_branching: int = TreeShape.branching
    history: tuple[tuple[str, str], ...] = ()  # earlier (user, assistant) turns: prompt is a follow-up
    repeats: int = 1  # runs of the same request; the verdict is their median


def _brief(value) -> str:
    """A raw value as a message shows it: short, and never failing (a 10**400 int has no float and
    a 10**5000 one has no str)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        exponent = int(abs(value).bit_length() * math.log10(2))
        return f"an integer near {'-' if value < 0 else ''}1e{exponent}"
    if isinstance(value, float):
        return f"{value:g}"
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."


def _number(name: str, value, low: float, high: float, integer: bool, low_open: bool = False) -> float | int:
    """value as a finite number in [low, high] ((low, high] when low_open), an int if asked."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidInput(f"{name} must be a number, got {_brief(value)}") from None
    # An int is always finite; math.isfinite would convert it to a float and overflow past 1e308.
    finite = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if isinstance(value, bool) or not finite:
        raise InvalidInput(f"{name} must be a finite number, got {_brief(value)}")
    if integer and value != int(value):
        raise InvalidInput(f"{name} must be a whole number, got {_brief(value)}")
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
    if value < low or (low_open and value == low) or value > high:
        raise InvalidInput(f"{name} must be in {interval}, got {_brief(value)}")
    return int(value) if integer else float(value)


def _text(name: str, value) -> None:
    """Text fields must be text: any other JSON type would fail further on, far from its cause."""
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be text, got {type(value).__name__} {_brief(value)}")


def check_prompt(prompt, limits: Limits) -> str:
    _text("prompt", prompt)
    if prompt is None or not prompt.strip():
        raise InvalidInput("prompt is empty: type something for the models to continue")
    if len(prompt) > limits.max_prompt_chars:
        raise InvalidInput(f"prompt is too long: {len(prompt)} characters, the limit is {limits.max_prompt_chars}")
    try:
        check_text("the prompt", prompt)
    except ValueError as error:
        raise InvalidInput(str(error)) from None
    return prompt


def check_prompt_tokens(n_tokens: int, limits: Limits) -> None:
    """The token limit needs the tokenizer, so it runs after loading and before any forward pass."""
    if n_tokens > limits.max_prompt_tokens:
        raise InvalidInput(f"prompt is too long: {n_tokens} tokens (with the chat template), "
                           f"the limit is max_prompt_tokens = {limits.max_prompt_tokens}")


def check_model(role: str, spec, limits: Limits) -> str:
    """An offline name, an allowed local folder or .gguf file, or a well-formed Hub id."""
    _text(f"{role} model", spec)
    if spec is None or not spec.strip():
        raise InvalidInput(f"{role} model is empty: pick a preset or type a model id")
    spec = spec.strip()
    if limits.allowlist is not None:
        if spec not in limits.allowlist:
            raise InvalidInput(f"unknown {role} model {_brief(spec)}: this public app only serves "
                               f"{', '.join(limits.allowlist)}")
        return spec
    if spec in OFFLINE_NAMES:
        return spec
    if spec.startswith((".", "/", "~")) or Path(spec).suffix == ".gguf" or spec.count("/") > 1:
        if not limits.allow_local_paths:
            raise InvalidInput(f"{role} model {_brief(spec)}: local paths are not allowed here")
        path = _local_model(spec)
        if path is None:
            raise InvalidInput(f"unknown {role} model {_brief(spec)}: no such model folder or .gguf file")
        check_remote_code(role, path, limits)
        return str(path)
    if not HUB_ID.match(spec) or ".." in spec:
        raise InvalidInput(f"unknown {role} model {_brief(spec)}: not an offline name "
                           f"({', '.join(OFFLINE_NAMES)}), a local folder, a .gguf file or a Hub id like 'org/name'")
    return spec


def _local_model(spec: str) -> Path | None:
    """The folder or .gguf file spec names, or None. Probing can fail (a null byte, a name too long,
    no permission); such a path names no model either."""
    try:
        path = Path(os.path.expanduser(spec))
        return path if path.is_dir() or (path.is_file() and path.suffix == ".gguf") else None
    except (OSError, ValueError):
        return None


def check_remote_code(role: str, folder: Path, limits: Limits) -> None:
    """A config with auto_map points at Python files in the model repo; loading it runs them."""
    if limits.allow_remote_code:
        return
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return  # no config (a .gguf file), or a broken one, which loading reports on its own
    if isinstance(config, dict) and config.get("auto_map"):
        raise InvalidInput(f"{role} model {str(folder)!r} needs trust_remote_code (its config maps to code "
                           "in the model repo); this app never runs model-repo code. Use a model "
                           "transformers supports natively, or the CLI with --trust-remote-code.")


def check_draft_layers(text) -> str:
    """The self drafter's layers as typed: indices and increasing ranges, like '0-7,10' ('' = the
    target's first half). Whether they exist needs the model: see the layer count check after loading."""
    _text("draft_layers", text)
    text = (text or "").strip()
    form = (f"draft_layers must be at most {DRAFT_LAYERS_MAX_CHARS} characters of digits, commas, dashes and "
            "spaces, layer indices and ranges like '0-7' or '0-5,9,11' (empty: the target's first half)")
    if len(text) > DRAFT_LAYERS_MAX_CHARS or not re.fullmatch(r"[\d,\- ]*", text):
        raise InvalidInput(f"{form}; got {_brief(text)}")
    if not text:
        return text
    for part in text.split(","):
        match = _LAYER_PART.fullmatch(part)
        if not match:
            raise InvalidInput(f"{form}; cannot read {_brief(part.strip())} in {_brief(text)}")
        start, end = int(match[1]), int(match[2] or match[1])
        if max(start, end) > DRAFT_LAYERS_MAX_INDEX:
            raise InvalidInput(f"draft_layers: layer {max(start, end)} is past the limit of "
                               f"{DRAFT_LAYERS_MAX_INDEX} (and past the model's depth)")
        if end < start:
            raise InvalidInput(f"draft_layers: the range {start}-{end} goes down; write it {end}-{start}")
    return text


def no_draft_drafters(conjunction: str = "and") -> str:
    """The drafters that need no draft model, as a sentence lists them: 'prompt-lookup, self and lookup-tree'."""
    names = [d for d in DRAFTERS if not needs_draft_model(d)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def check_request(limits: Limits, *args, **kwargs) -> Checked:
    """All checks that need no model, in the order of the API's arguments (playground.fields). Takes
    the request as /compare does: positionally, by name, or both; `history` by name only."""
    try:
        values = bind(args, kwargs)
    except TypeError as error:
        raise InvalidInput(f"the request's arguments: {error}; /compare takes {', '.join(NAMES)}") from None
    drafter, policy, adaptive = values["drafter"], values["policy"], values["adaptive_k"]
    prompt = check_prompt(values["prompt"], limits)
    if not isinstance(drafter, str) or drafter not in DRAFTERS:  # a list or dict is not even hashable
        raise InvalidInput(f"unknown drafter {_brief(drafter)}; choose one of {', '.join(DRAFTERS)}")
    target = check_model("target", values["target"], limits)
    draft = _check_draft(values["draft"], drafter, limits)
    if not isinstance(adaptive, bool):
        raise InvalidInput(f"adaptive_k must be true or false, got {_brief(adaptive)}")
    if not isinstance(policy, str) or policy not in POLICIES:
        raise InvalidInput(f"unknown policy {_brief(policy)}; choose one of {', '.join(POLICIES)}")
    if adaptive and policy == "cost":
        raise InvalidInput("adaptive_k is the heuristic policy; it cannot be combined with policy 'cost'")
    _text("draft_layers", values["draft_layers"])  # even where the drafter ignores it, like the draft
    layers = check_draft_layers(values["draft_layers"]) if drafter == "self" else None
    numbers = {f.name: _number(f.name, values[f.name], *f.bounds(limits), integer=f.integer, low_open=f.low_open)
               for f in COMPARE_FIELDS if f.bounds is not None}
    # The policy has one name from here on: adaptive_k is the older clients' spelling of "heuristic".
    return Checked(prompt=prompt, target=target, draft=draft, drafter=drafter, policy="heuristic" if adaptive else policy,
                   draft_layers=layers, history=check_history(values["history"], limits), **numbers)


def _check_draft(draft, drafter: str, limits: Limits) -> str | None:
    """The draft model where the drafter needs one (None where it does not); text either way."""
    _text("draft model", draft)
    if not needs_draft_model(drafter):
        return None
    if not (draft and draft.strip()):
        raise InvalidInput(f"the {drafter} drafter needs a draft model; pick one, or use {no_draft_drafters('or')}, "
                           "which need none")
    return check_model("draft", draft, limits)


MAX_TURNS = 8  # earlier turns a follow-up may carry


def check_history(history, limits: Limits) -> tuple[tuple[str, str], ...]:
    """A conversation's earlier turns: a list of [user, assistant] pairs of text (None or [] = none),
    at most MAX_TURNS, each text within the prompt's character limit."""
    if history is None:
        return ()
    if not isinstance(history, (list, tuple)) or len(history) > MAX_TURNS:
        raise InvalidInput(f"history must be a list of at most {MAX_TURNS} [user, assistant] pairs, "
                           f"got {_brief(history)}")
    turns = []
    for turn in history:
        if not (isinstance(turn, (list, tuple)) and len(turn) == 2 and all(isinstance(t, str) for t in turn)):
            raise InvalidInput(f"each history turn must be a [user, assistant] pair of texts, got {_brief(turn)}")
        if any(len(t) > limits.max_prompt_chars for t in turn):
            raise InvalidInput(f"a history turn is too long: the limit is {limits.max_prompt_chars} characters a text")
        turns.append((turn[0], turn[1]))
    return tuple(turns)
