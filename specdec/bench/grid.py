"""What the benchmark runs: model setups, prompt suites, plans, and the grid of cells they expand to.

A cell is one speculative configuration measured on one prompt: (setup, prompt, temperature,
max_new_tokens, drafter, k, policy). Cells that share (setup, prompt, temperature, max_new_tokens)
form a group: each repeat of a group times the baselines (model.generate, our standard decoding)
once and then every cell's lanes, one after the other, so background load hits them all alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import jsonl
from ..engine.config import Sampling, Speculation
from ..engine.drafters import DRAFTERS, needs_draft_model
from ..engine.policy import POLICIES

# How k moves is the engine's policy, by its one name: fixed, heuristic (transformers' +2/-1
# schedule) or cost (k from measured acceptance and costs, 0 when speculation cannot pay). The bench
# once called them schedules, constant and adaptive: those names are read (flags, old results.json)
# and translated here, once.
OLD_POLICY_NAMES = {"constant": "fixed", "adaptive": "heuristic"}


# A cell's drafter may also be "auto": Pair.auto's setup (the cost policy over every source the pair
# has, k up to its own limit), the same that the CLI's --auto and the app's Auto button run.
AUTO = "auto"


def policy_name(name: str) -> str:
    """A policy by its engine name; the bench's older names translated."""
    return OLD_POLICY_NAMES.get(name, name)


def upgrade_cell(record: dict) -> dict:
    """A results.json cell written before the rename: "schedule" becomes "policy", and its key follows."""
    if "schedule" not in record:
        return record
    record = {**record, "policy": policy_name(record["schedule"])}
    del record["schedule"]
    fields = {name: record[name] for name in Cell.__dataclass_fields__}
    return {**record, "key": Cell(**fields).key}


@dataclass(frozen=True)
class Setup:
    """A target and, for drafters that need one, a draft model (any form load_model takes)."""

    name: str
    target: str
    draft: str | None = None
    draft_quantize: str | None = None  # "int8": a cheaper copy of the draft (CPU)
    draft_layers: str | None = None  # the self drafter's layers: '0-7,10' or a search-layers file


@dataclass(frozen=True)
class Plan:
    """A slice of the grid on one setup. None for prompts or drafters means all of them."""

    setup: Setup
    prompts: tuple[str, ...] | None = None  # prompt ids
    per_category: int | None = None  # else the first n prompts of each category
    drafters: tuple[str, ...] | None = None
    ks: tuple[int, ...] = (4,)
    policies: tuple[str, ...] = ("fixed",)
    temperatures: tuple[float, ...] = (0.0,)
    max_new_tokens: int = 128
    repeats: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "policies", tuple(policy_name(p) for p in self.policies))
        unknown = set(self.policies) - set(POLICIES)
        if unknown:
            raise ValueError(f"unknown policy(ies) {sorted(unknown)}; choose from {list(POLICIES)}")
        if self.repeats < 1 or self.max_new_tokens < 1:
            raise ValueError("repeats and max_new_tokens must be >= 1")
        for k in self.ks:  # each k and temperature refused by its own message before anything loads
            Speculation(k=k)
        for temperature in self.temperatures:
            Sampling(temperature=temperature)
        if self.drafters is not None and AUTO in self.drafters and "cost" not in self.policies:
            raise ValueError("auto runs the cost policy whatever --policies says: add cost to --policies, "
                             "or drop auto from --drafters")


@dataclass(frozen=True)
class Prompt:
    id: str
    category: str
    text: str


@dataclass(frozen=True)
class Cell:
    setup: str
    prompt: str
    category: str
    temperature: float
    max_new_tokens: int
    drafter: str
    k: int
    policy: str

    @property
    def key(self) -> str:
        return (f"{self.setup}|{self.prompt}|T={self.temperature:g}|n={self.max_new_tokens}|"
                f"{self.drafter}|k={self.k}|{self.policy}")


@dataclass(frozen=True)
class Group:
    setup: Setup
    prompt: Prompt
    temperature: float
    max_new_tokens: int
    repeats: int
    cells: tuple[Cell, ...]


def load_suite(path: str | Path) -> list[Prompt]:
    """A JSONL file of {"id", "category", "prompt"} objects; ids must be unique."""
    prompts, seen = [], set()
    for number, row in jsonl.rows(path):
        missing = {"id", "category", "prompt"} - set(row)
        if missing:
            raise ValueError(f"{path}:{number}: missing field(s) {sorted(missing)}")
        prompt_id = str(row["id"])  # (1 and "1" are one id: the results key cells by the string)
        if prompt_id in seen:
            raise ValueError(f"{path}:{number}: duplicate prompt id {row['id']!r}")
        if not isinstance(row["prompt"], str) or not row["prompt"].strip():
            raise ValueError(f"{path}:{number}: prompt {prompt_id!r} must be non-blank text, got {row['prompt']!r}")
        seen.add(prompt_id)
        prompts.append(Prompt(prompt_id, str(row["category"]), row["prompt"]))
    if not prompts:
        raise ValueError(f"{path}: no prompts")
    return prompts


def select_prompts(plan: Plan, suite: list[Prompt]) -> list[Prompt]:
    by_id = {p.id: p for p in suite}
    if plan.prompts is not None:
        unknown = [i for i in plan.prompts if i not in by_id]
        if unknown:
            raise ValueError(f"prompt id(s) not in the suite: {unknown}")
        chosen = [by_id[i] for i in plan.prompts]
    else:
        chosen = list(suite)
    if plan.per_category is not None:
        counts: dict[str, int] = {}
        kept = []
        for p in chosen:
            counts[p.category] = counts.get(p.category, 0) + 1
            if counts[p.category] <= plan.per_category:
                kept.append(p)
        chosen = kept
    return chosen


def runnable_drafters(plan: Plan) -> tuple[list[str], list[str]]:
    """(drafters to run, drafters skipped because the setup has no draft model)."""
    names = list(plan.drafters) if plan.drafters is not None else list(DRAFTERS)
    unknown = [d for d in names if d not in DRAFTERS and d != AUTO]
    if unknown:
        raise ValueError(f"unknown drafter(s) {unknown}; registered: {sorted(DRAFTERS)}")
    if plan.setup.draft is not None:
        return names, []
    skipped = [d for d in names if d != AUTO and needs_draft_model(d)]
    return [d for d in names if d not in skipped], skipped


def expand(plans: list[Plan], suite: list[Prompt]) -> list[Group]:
    """Every plan's cells, grouped; plans that meet in a group merge (the most repeats win)."""
    groups: dict[tuple, dict] = {}
    for plan in plans:
        drafters, _ = runnable_drafters(plan)
        for prompt in select_prompts(plan, suite):
            for temperature in plan.temperatures:
                key = (plan.setup.name, prompt.id, float(temperature), plan.max_new_tokens)
                group = groups.setdefault(key, {"setup": plan.setup, "prompt": prompt, "repeats": 0, "cells": {}})
                if group["setup"] != plan.setup:
                    raise ValueError(f"two different setups are both named {plan.setup.name!r}")
                group["repeats"] = max(group["repeats"], plan.repeats)
                for drafter in drafters:
                    for k in plan.ks:
                        # (auto is Pair.auto's setup, the cost policy: its cells under another are not auto's)
                        for policy in plan.policies if drafter != AUTO else ("cost",):
                            cell = Cell(plan.setup.name, prompt.id, prompt.category, float(temperature),
                                        plan.max_new_tokens, drafter, k, policy)
                            group["cells"].setdefault(cell.key, cell)
    return [Group(g["setup"], g["prompt"], key[2], key[3], g["repeats"], tuple(g["cells"].values()))
            for key, g in groups.items()]


def setups_of(plans: list[Plan]) -> list[Setup]:
    seen: dict[str, Setup] = {}
    for plan in plans:
        seen.setdefault(plan.setup.name, plan.setup)
    return list(seen.values())
