"""From raw repeats to the numbers the report prints: medians with spread, ratios, goals.

Pure functions over the JSON records, so the report can be rebuilt from results.json alone.
Ratios (speedups) are taken within a repeat, where the lanes ran back to back under the same
background load, and only then summarised across repeats.
"""
from __future__ import annotations

import statistics
from typing import Iterable, Sequence

from .lanes import GENERATE, SPECULATIVE, STANDARD
from ..engine.stats import expected_tokens, position_acceptance, predicted_speedup_rounds

EFFICIENCY_GOAL = 0.9
AUTO_FLOOR, AUTO_PEER_GOAL = 1.0, 1.2  # issue #22's goals for auto: vs standard, vs transformers' defaults
DEFAULTS_PEER = "hf-assisted-defaults"  # transformers' assisted generation with its real defaults (lanes.PEERS)
CODE_GOAL = 1.2


def spread(values: Iterable[float | None]) -> dict | None:
    """Median, min and max of the defined values; None when there are none."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": xs[0], "max": xs[-1], "n": len(xs)}


def median(values: Iterable[float | None]) -> float | None:
    s = spread(values)
    return s["median"] if s else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _predicted(rep: dict, verify_cost: float | None) -> float | None:
    """The theory's speedup for one repeat's own rounds: sum tau(alpha, m_r) / sum (m_r c + v_r)."""
    alpha, c = rep["stats"]["alpha"], rep["stats"]["c"]
    if alpha is None or c is None or not verify_cost:  # c unmeasured is not c = 0 (a free draft)
        return None
    return predicted_speedup_rounds(alpha, [m for m, _ in rep["rounds"]], c, verify_cost)


def _expected_tau(rep: dict) -> float | None:
    alpha, drafted = rep["stats"]["alpha"], [m for m, _ in rep["rounds"]]
    return expected_tokens(alpha, drafted) / len(drafted) if alpha is not None and drafted else None


def lane_names(cell: dict) -> list[str]:
    return list(cell["repeats"][0]["lanes"]) if cell["repeats"] else []


def peer_names(cell: dict) -> list[str]:
    return [n for n in lane_names(cell) if n not in (GENERATE, STANDARD, SPECULATIVE)]


def summarize_cell(cell: dict) -> dict:
    """One cell's repeats reduced to medians (with min/max) and the theory's comparison."""
    reps = cell["repeats"]
    tps = lambda rep, lane: rep["lanes"][lane]["tokens_per_s"]  # noqa: E731
    stat = lambda name: median(rep["stats"][name] for rep in reps)  # noqa: E731
    rounds = [r for rep in reps for r in rep["rounds"]]
    # Recomputed from each repeat's rounds, so results.json of any age gets the per-round theory.
    predicted = median(_predicted(rep, 1.0) for rep in reps)
    predicted_vc = median(_predicted(rep, rep["stats"]["verify_cost"]) for rep in reps)
    speedup = spread(_ratio(tps(r, SPECULATIVE), tps(r, STANDARD)) for r in reps)
    out = {
        **{key: cell[key] for key in ("key", "setup", "prompt", "category", "temperature", "max_new_tokens",
                                      "drafter", "k", "policy")},
        "repeats": len(reps),
        "tokens_per_s": {lane: spread(tps(r, lane) for r in reps) for lane in lane_names(cell)},
        "speedup": speedup,
        "vs_standard": {lane: spread(_ratio(tps(r, lane), tps(r, STANDARD)) for r in reps)
                        for lane in lane_names(cell)},
        "speedup_vs_generate": spread(_ratio(tps(r, SPECULATIVE), tps(r, GENERATE)) for r in reps),
        "standard_vs_generate": spread(_ratio(tps(r, STANDARD), tps(r, GENERATE)) for r in reps),
        "vs_peer": {p: spread(_ratio(tps(r, SPECULATIVE), tps(r, p)) for r in reps) for p in peer_names(cell)},
        # Per target forward pass: tokens (tokens per round for a speculative lane) and draft passes
        # (tokens drafted per round): the same counters for our lanes and transformers'.
        "tokens_per_pass": {lane: median(_per_pass(r["lanes"][lane], "tokens") for r in reps)
                            for lane in lane_names(cell)},
        "drafts_per_pass": {lane: median(_per_pass(r["lanes"][lane], "draft_forwards") for r in reps)
                            for lane in lane_names(cell)},
        "alpha": stat("alpha"),
        "alpha_analytic": stat("alpha_analytic"),
        "tau": median(_expected_tau(rep) for rep in reps),
        "tokens_per_round": stat("tokens_per_round"),
        "c": stat("c"),
        "verify_cost": stat("verify_cost"),
        "predicted_speedup": predicted,
        "predicted_speedup_with_verify_cost": predicted_vc,
        "efficiency": _ratio(speedup["median"] if speedup else None, predicted),
        "efficiency_with_verify_cost": _ratio(speedup["median"] if speedup else None, predicted_vc),
        "position_acceptance": position_acceptance([m for m, _ in rounds], [n for _, n in rounds]),
        "empty_rounds": sum(1 for m, _ in rounds if m == 0) / len(rounds) if rounds else None,
        "identical": {lane: _all_match(reps, lane) for lane in lane_names(cell) if lane != STANDARD},
        # Share of our lanes' wall time outside the engine's timed device work (Python, drafter setup).
        "overhead": {lane: median(_overhead(r["lanes"][lane]) for r in reps) for lane in (STANDARD, SPECULATIVE)},
        "noise": {lane: _relative_spread(tps(r, lane) for r in reps) for lane in (GENERATE, STANDARD)},
        "loadavg": median(x for r in reps for x in r.get("loadavg", [])),
        "other_cores": max((lane.get("other_cores") or 0.0 for r in reps for lane in r["lanes"].values()),
                           default=None),
        "attempts": sum(r.get("attempts", 1) for r in reps),
        "major_faults": _total(lane.get("major_faults") for r in reps for lane in r["lanes"].values()),
    }
    return out


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _per_pass(lane: dict, field: str) -> float | None:
    passes = lane.get("target_forwards")
    return lane[field] / passes if passes and lane.get(field) is not None else None


def _overhead(lane: dict) -> float | None:
    engine, wall = lane.get("engine_seconds"), lane["seconds"]
    return 1.0 - engine / wall if engine is not None and wall > 0 else None


def _all_match(reps: Sequence[dict], lane: str) -> bool | None:
    """True/False on greedy runs (every repeat's ids equal our standard's), None when sampled."""
    flags = [r["lanes"][lane]["matches_standard"] for r in reps]
    return None if any(f is None for f in flags) else all(flags)


def _relative_spread(values: Iterable[float | None]) -> float | None:
    s = spread(values)
    return (s["max"] - s["min"]) / s["median"] if s and s["median"] else None


def differences(results: dict) -> list[dict]:
    """Every greedy lane whose ids differ from our standard decoding's, with where they first differ."""
    found = []
    for cell in results["cells"]:
        for rep in cell["repeats"]:
            for lane, rec in rep["lanes"].items():
                if rec.get("matches_standard") is False:
                    found.append({"cell": cell["key"], "repeat": rep["repeat"], "lane": lane,
                                  "first_difference": rec["first_difference"], "tokens": rec["tokens"],
                                  "standard_tokens": rep["lanes"][STANDARD]["tokens"]})
    return found


def table_rows(summaries: list[dict], by: Sequence[str]) -> list[dict]:
    """Cell summaries pooled over prompts: the median of each prompt's median, grouped by `by`."""
    groups: dict[tuple, list[dict]] = {}
    for s in summaries:
        groups.setdefault(tuple(s[b] for b in by), []).append(s)
    rows = []
    for key, members in groups.items():
        peers = sorted({p for m in members for p in m["vs_peer"]})
        pick = lambda f: median(f(m) for m in members)  # noqa: E731
        rows.append({
            **dict(zip(by, key)),
            "prompts": len(members),
            "standard_tps": pick(lambda m: _med(m["tokens_per_s"].get(STANDARD))),
            "generate_tps": pick(lambda m: _med(m["tokens_per_s"].get(GENERATE))),
            "speculative_tps": pick(lambda m: _med(m["tokens_per_s"].get(SPECULATIVE))),
            "peer_tps": {p: pick(lambda m, p=p: _med(m["tokens_per_s"].get(p))) for p in peers},
            "vs_peer": {p: pick(lambda m, p=p: _med(m["vs_peer"].get(p))) for p in peers},
            "vs_standard": {lane: pick(lambda m, lane=lane: _med(m["vs_standard"].get(lane)))
                            for lane in (GENERATE, SPECULATIVE, *peers)},
            "tokens_per_pass": {lane: pick(lambda m, lane=lane: m["tokens_per_pass"].get(lane))
                                for lane in (SPECULATIVE, *peers)},
            "drafts_per_pass": {lane: pick(lambda m, lane=lane: m["drafts_per_pass"].get(lane))
                                for lane in (SPECULATIVE, *peers)},
            "speedup": pick(lambda m: _med(m["speedup"])),
            "speedup_min": min((m["speedup"]["min"] for m in members if m["speedup"]), default=None),
            "speedup_max": max((m["speedup"]["max"] for m in members if m["speedup"]), default=None),
            "speedup_vs_generate": pick(lambda m: _med(m["speedup_vs_generate"])),
            "standard_vs_generate": pick(lambda m: _med(m["standard_vs_generate"])),
            **{f: pick(lambda m, f=f: m[f]) for f in (
                "alpha", "alpha_analytic", "tau", "tokens_per_round", "c", "verify_cost", "predicted_speedup",
                "predicted_speedup_with_verify_cost", "efficiency", "efficiency_with_verify_cost", "empty_rounds")},
        })
    return rows


def _med(s: dict | None) -> float | None:
    return s["median"] if s else None


def baseline_rows(summaries: list[dict]) -> list[dict]:
    """Our standard vs model.generate per setup and category. Each group's baselines appear in all of
    its cells (same measurements), so take one cell per group."""
    seen, unique = set(), []
    for s in summaries:
        group = (s["setup"], s["prompt"], s["temperature"], s["max_new_tokens"])
        if group not in seen:
            seen.add(group)
            unique.append(s)
    rows = []
    for (setup, temperature, category), members in _group(unique, ("setup", "temperature", "category")).items():
        rows.append({
            "setup": setup, "temperature": temperature, "category": category, "prompts": len(members),
            "standard_tps": median(_med(m["tokens_per_s"][STANDARD]) for m in members),
            "generate_tps": median(_med(m["tokens_per_s"][GENERATE]) for m in members),
            "ratio": median(_med(m["standard_vs_generate"]) for m in members),
            "ratio_min": min((m["standard_vs_generate"]["min"] for m in members if m["standard_vs_generate"]),
                             default=None),
            "noise": median(m["noise"][STANDARD] for m in members),
            "overhead": median(m["overhead"][STANDARD] for m in members),
            "other_cores": max((m["other_cores"] for m in members if m["other_cores"] is not None), default=None),
            "major_faults": _total(m["major_faults"] for m in members),
        })
    return rows


def _group(items: list[dict], by: Sequence[str]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for item in items:
        out.setdefault(tuple(item[b] for b in by), []).append(item)
    return out


def goals(summaries: list[dict]) -> list[dict]:
    """The issue's goals, each with a verdict and the numbers behind it."""
    out = []
    base = baseline_rows(summaries)
    for setup, rows in _group(base, ("setup",)).items():
        overall = median(s["standard_vs_generate"]["median"] for s in summaries
                         if s["setup"] == setup[0] and s["standard_vs_generate"])
        worst = min((r["ratio_min"] for r in rows if r["ratio_min"] is not None), default=None)
        out.append({"goal": f"standard >= 1.0x model.generate ({setup[0]})", "met": _ge(overall, 1.0),
                    "value": overall, "detail": {"worst_repeat": worst}})
    peer_cells = [(s, p, v["median"]) for s in summaries for p, v in s["vs_peer"].items() if v]
    for (setup, peer), cells in _group([{"setup": s["setup"], "peer": p, "cell": s, "ratio": r}
                                        for s, p, r in peer_cells], ("setup", "peer")).items():
        losing = [c for c in cells if c["ratio"] < 1.0]
        # Behind on the median but ahead in at least one repeat: a gap inside the run-to-run noise.
        noisy = [c for c in losing if c["cell"]["vs_peer"][peer]["max"] >= 1.0]
        passes = lambda field, lane: median(c["cell"][field].get(lane) for c in cells)  # noqa: E731
        out.append({"goal": f"speculative >= {peer} on every cell ({setup})", "met": not losing,
                    "value": median(c["ratio"] for c in cells),
                    "detail": {"cells": len(cells), "behind": [(c["cell"]["key"], round(c["ratio"], 3))
                                                               for c in losing],
                               "behind_but_ahead_in_a_repeat": len(noisy),
                               "tokens_per_pass_ours": passes("tokens_per_pass", SPECULATIVE),
                               "tokens_per_pass_peer": passes("tokens_per_pass", peer),
                               "drafts_per_pass_ours": passes("drafts_per_pass", SPECULATIVE),
                               "drafts_per_pass_peer": passes("drafts_per_pass", peer)}})
        code = [c["ratio"] for c in cells if c["cell"]["category"].startswith("code")]
        if code and peer.startswith("hf-assisted"):
            out.append({"goal": f"speculative >= {CODE_GOAL}x {peer} on code prompts ({setup})",
                        "met": _ge(median(code), CODE_GOAL), "value": median(code), "detail": {"cells": len(code)}})
    out += auto_goals(summaries)
    eligible = [s for s in summaries if s["predicted_speedup"] is not None and s["predicted_speedup"] > 1.0]
    for setup, cells in _group(eligible, ("setup",)).items():
        low = [s for s in cells if s["efficiency"] is not None and s["efficiency"] < EFFICIENCY_GOAL]
        out.append({"goal": f"efficiency >= {EFFICIENCY_GOAL} where predicted > 1 ({setup[0]})", "met": not low,
                    "value": median(s["efficiency"] for s in cells),
                    "detail": {"cells": len(cells), "below": len(low),
                               "median_verify_cost": median(s["verify_cost"] for s in cells),
                               "median_efficiency_with_verify_cost": median(
                                   s["efficiency_with_verify_cost"] for s in cells)}})
    return out


def auto_goals(summaries: list[dict]) -> list[dict]:
    """Issue #22's goals for auto (the cost policy over every source): never slower than our standard
    decoding in any category; against transformers' assisted generation with its real defaults on
    the same model objects, ahead in every category and AUTO_PEER_GOAL ahead overall (the median of
    the categories' medians)."""
    out = []
    auto = [s for s in summaries if s["policy"] == "cost" and s["speedup"]]
    for setup, cells in _group(auto, ("setup",)).items():
        by_category = _by_category(cells, lambda s: s["speedup"])
        worst = min(by_category.values())
        out.append({"goal": f"auto >= {AUTO_FLOOR}x standard on every category ({setup[0]})",
                    "met": _ge(worst, AUTO_FLOOR), "value": worst,
                    "detail": {"by_category": {c: round(v, 3) for c, v in by_category.items()}}})
        vs_defaults = _by_category(cells, lambda s: s["vs_peer"].get(DEFAULTS_PEER))
        if vs_defaults:
            detail = {"by_category": {c: round(v, 3) for c, v in vs_defaults.items()}}
            overall = median(vs_defaults.values())
            out.append({"goal": f"auto >= {AUTO_PEER_GOAL}x {DEFAULTS_PEER} overall ({setup[0]})",
                        "met": _ge(overall, AUTO_PEER_GOAL), "value": overall, "detail": detail})
            worst = min(vs_defaults.values())
            out.append({"goal": f"auto >= 1.0x {DEFAULTS_PEER} on every category ({setup[0]})",
                        "met": _ge(worst, 1.0), "value": worst, "detail": detail})
    return out


def _by_category(cells: list[dict], ratio) -> dict[str, float]:
    """category -> the median over its cells of ratio(cell)'s median, for cells that have one."""
    values: dict[str, list[float]] = {}
    for s in cells:
        if (r := ratio(s)) is not None:
            values.setdefault(s["category"], []).append(r["median"])
    return {c: statistics.median(v) for c, v in sorted(values.items())}


def _ge(value: float | None, goal: float) -> bool | None:
    return None if value is None else value >= goal
