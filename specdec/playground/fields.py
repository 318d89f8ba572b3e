"""The /compare request's fields, declared once.

Each field has its API name, the value the page starts with, whether an API client must send it,
a line of help and, for numbers, the range a request must fall in (read off the app's Limits, so a
public Space and a local run share one declaration). Everything that lists the request reads this
tuple and nothing else:

- the handler's signature, which is what gradio_client and the "Use via API" page show (`signature`);
- the order of the Gradio input components (app.build_demo maps names to components);
- the validation (limits.check_request binds the raw values by these names, then checks each range);
- the `fields` list of /limits, so a client can validate before sending (`describe`);
- the tests' request builder (tests/helpers.compare_args).

The first ten fields are required for API compatibility: they were the endpoint's first arguments,
and older clients send them positionally. The later ones are optional and keep their defaults.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..engine.config import MAX_BRANCHING, TreeShape

if TYPE_CHECKING:
    from .limits import Limits


@dataclass(frozen=True)
class Field:
    name: str
    value: object  # the page's initial value, and the default of a field an API client may leave out
    required: bool  # an API client must send it (the endpoint's original ten arguments)
    help: str
    bounds: Callable[["Limits"], tuple[float, float]] | None = None  # numbers: [low, high] under these limits
    integer: bool = False
    low_open: bool = False  # (low, high]: top_p = 0 would keep no token

    def parameter(self) -> inspect.Parameter:
        default = inspect.Parameter.empty if self.required else self.value
        return inspect.Parameter(self.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)


_TREE = TreeShape()
COMPARE_FIELDS: tuple[Field, ...] = (
    Field("prompt", "", True, "the user's message"),
    Field("target", "embedded", True, "target model: an offline name, a Hub id, a model folder or a .gguf file"),
    Field("draft", "", True, "draft model, for the drafters that need one ('' for the others)"),
    Field("drafter", "prompt-lookup", True, "where drafts come from: one of /limits' drafters"),
    Field("k", 4, True, "tokens drafted per round; the tree drafters' depth", lambda lim: (1, lim.k_max), True),
    Field("adaptive_k", False, True, "older clients' switch for policy 'heuristic'; prefer policy"),
    Field("temperature", 0.0, True, "0 = greedy; p and q get the same temperature",
          lambda lim: (0.0, lim.temperature_max)),
    Field("top_p", 1.0, True, "nucleus mass, applied to target and draft alike", lambda lim: (0.0, 1.0),
          low_open=True),
    Field("max_new_tokens", 96, True, "tokens each lane generates at most", lambda lim: (1, lim.max_new_tokens),
          True),
    Field("seed", 0, True, "the sampling seed, the same for both lanes", lambda lim: (0, lim.seed_max), True),
    Field("policy", "fixed", False, "how k is chosen each round: one of /limits' policies"),
    Field("draft_layers", "", False, "the self drafter's layers, like '0-7' or '0-5,9,11' ('' = the first half)"),
    Field("tree_budget", _TREE.budget, False, "tree drafters: nodes the target verifies in one pass",
          lambda lim: (1, lim.tree_budget_max), True),
    Field("tree_branching", _TREE.branching, False, "draft-tree: children per expanded node",
          lambda lim: (1, MAX_BRANCHING), True),
    Field("repeats", 1, False, "runs of the same request, one after the other; the verdict is their median",
          lambda lim: (1, lim.max_repeats), True),
)
FIELD = {f.name: f for f in COMPARE_FIELDS}
NAMES = tuple(FIELD)

# Not an API argument: the follow-up box passes the conversation so far as a keyword.
HISTORY = inspect.Parameter("history", inspect.Parameter.KEYWORD_ONLY, default=None)


def signature() -> inspect.Signature:
    """The handler's signature: the fields in order, then the keyword-only history."""
    return inspect.Signature([f.parameter() for f in COMPARE_FIELDS] + [HISTORY])


def bind(args: tuple, kwargs: dict) -> dict:
    """A raw request's values by name, defaults filled in (TypeError, as a call would raise, when a
    required field is missing or an unknown one is given)."""
    bound = signature().bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def describe(limits: "Limits") -> list[dict]:
    """The fields as /limits reports them: name, required, help, initial (the page's starting value), the
    default the server fills in for an optional field left out (a required field has none: a client
    must send it), and the range where there is one."""
    out = []
    for f in COMPARE_FIELDS:
        entry = {"name": f.name, "required": f.required, "help": f.help, "initial": f.value}
        if not f.required:
            entry["default"] = f.value
        if f.bounds is not None:
            low, high = f.bounds(limits)
            entry.update(min=low, max=high, integer=f.integer, min_exclusive=f.low_open)
        out.append(entry)
    return out
