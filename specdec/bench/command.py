"""python -m specdec bench: does speculative decoding pay off for this model pair and workload?

Runs a prompt suite over a grid of drafters (every one in the engine's registry), k values,
k policies and temperatures, with repeats, timing our standard and speculative decoding next to
transformers' model.generate, assisted generation and prompt lookup. Writes results.json (every
measurement; finished cells are skipped on the next run), a Markdown report and plotly figures.

    python -m specdec bench --quick                      # a few minutes on CPU
    python -m specdec bench --auto                       # auto on every category, against transformers' defaults
    python -m specdec bench                              # the full CPU grid (docs/BENCHMARKS.md)
    python -m specdec bench --target Qwen/Qwen2.5-7B-Instruct --draft Qwen/Qwen2.5-0.5B-Instruct --k 3,5
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import shlex
import sys
import time
from pathlib import Path

from .figures import write_figures
from ..engine.policy import POLICIES
from ..engine.pair import Session
from .grid import AUTO, Plan, upgrade_cell, Setup, expand, load_suite, needs_draft_model, runnable_drafters, setups_of
from .lanes import Models, busiest, jobs_for, run_repeat, warm_up
from .meters import OtherLoad, machine
from . import spec_bench, spec_bench_run
from .jsonl import save_json
from .grid_presets import auto_plans, full_plans, quick_plans
from ..models.offline import USER_ERRORS
from .report import report
from .report_sections import keep_sections
from .medians import summarize_cell

# The shared suite when it sits beside the checkout, else the copy shipped in the package (fresh clones).
SUITES = ("shared/prompts/bench.jsonl", "../shared/prompts/bench.jsonl",
          str(Path(__file__).parent / "prompts" / "bench.jsonl"))


def csv(kind):
    return lambda text: tuple(kind(x) for x in text.split(",") if x.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m specdec bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the small grid (a few minutes on CPU)")
    p.add_argument("--auto", action="store_true",
                   help="the auto grid: the cost policy with the hybrid drafter (int8 draft) on every category "
                        "of each setup, against standard decoding, generate() and transformers' assisted defaults")
    p.add_argument("--suite", default=None,
                   help="prompt JSONL with id, category, prompt (default: shared/prompts/bench.jsonl)")
    p.add_argument("--out", default="bench-results", help="folder for results.json and figures/")
    p.add_argument("--report", default=None, help="Markdown report path (default: OUT/report.md)")
    p.add_argument("--fresh", action="store_true", help="start over instead of skipping finished cells")
    p.add_argument("--report-only", action="store_true", help="rebuild the report and figures from results.json")
    p.add_argument("--no-png", action="store_true", help="HTML figures only")
    p.add_argument("--plotlyjs", default="directory", choices=["directory", "cdn"],
                   help="HTML figures load plotly.js from a copy beside them (offline) or from the CDN")
    p.add_argument("--notes", default=None, help="Markdown file appended to the report as its analysis")
    g = p.add_argument_group("a shared machine")
    g.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    g.add_argument("--quiet-cores", type=float, default=0.5,
                   help="a repeat during which other processes used more CPU cores than this is redone")
    g.add_argument("--retries", type=int, default=1, help="how many times a busy repeat is redone")
    g.add_argument("--wait", type=float, default=0.0,
                   help="before each repeat, wait up to this many seconds for other processes to go quiet")
    p.add_argument("--setups", type=csv(str), default=None,
                   help="comma list: only the preset's plans for these setups (a long run in parts; finished "
                        "cells are kept, so a later run without it does the rest)")
    g = p.add_argument_group("models (instead of the preset's setups)")
    g.add_argument("--target", default=None, help="Hub id, folder, .gguf or offline name")
    g.add_argument("--draft", default=None, help="draft model for the draft-model drafter")
    g.add_argument("--draft-quantize", default=None, choices=["int8"])
    g.add_argument("--draft-layers", default=None, help="the self drafter's layers: 0-7,10 or a search-layers file")
    g.add_argument("--name", default=None, help="label for this setup in the report")
    g.add_argument("--device", default=None)
    g.add_argument("--dtype", default=None)
    g.add_argument("--engine", default=None, choices=["fast", "eager"],
                   help="CPU kernels for both models (default: fast on CPU); transformers' peers run on the same "
                        "model objects, so run once per engine to compare a user's eager model with ours")
    g.add_argument("--trust-remote-code", action="store_true")
    g = p.add_argument_group("grid (overrides every plan of the preset)")
    g.add_argument("--drafters", type=csv(str), default=None, help="comma list (default: every registered drafter)")
    g.add_argument("--k", type=csv(int), default=None, help="comma list of k values")
    g.add_argument("--policies", "--schedules", dest="policies", type=csv(str), default=None,
                   help=f"comma list from {','.join(POLICIES)} (the older constant, adaptive: fixed, heuristic)")
    g.add_argument("--temperatures", type=csv(float), default=None, help="comma list; 0 = greedy")
    g.add_argument("--max-new-tokens", type=int, default=None)
    g.add_argument("--repeats", type=int, default=None)
    g.add_argument("--prompts", type=csv(str), default=None, help="comma list of prompt ids")
    g.add_argument("--per-category", type=int, default=None,
                   help="first n prompts of each category (a Spec-Bench file: n drawn with --sample-seed)")
    g.add_argument("--sample-seed", type=int, default=0, help="the seed of a Spec-Bench file's sample")
    return p


def make_plans(args, suite) -> list[Plan]:
    if args.target:
        setup = Setup(args.name or args.target + (f"+{args.draft}" if args.draft else ""), args.target, args.draft,
                      args.draft_quantize, args.draft_layers)
        base = (auto_plans(suite, (setup,))[0] if args.auto else quick_plans()[0] if args.quick
                else Plan(setup, per_category=1, ks=(2, 4, 6), repeats=3))
        plans = [dataclasses.replace(base, setup=setup)]
    else:
        plans = auto_plans(suite) if args.auto else quick_plans() if args.quick else full_plans(suite)
    overrides = {name: value for name, value in (
        ("drafters", args.drafters), ("ks", args.k), ("policies", args.policies),
        ("temperatures", args.temperatures), ("max_new_tokens", args.max_new_tokens), ("repeats", args.repeats),
        ("prompts", args.prompts), ("per_category", args.per_category)) if value is not None}
    if args.prompts is not None and args.per_category is None:
        overrides["per_category"] = None
    if args.setups:
        known = {plan.setup.name for plan in plans}
        if unknown := set(args.setups) - known:
            raise SystemExit(f"--setups: no plan for {', '.join(sorted(unknown))}; "
                             f"this grid has {', '.join(sorted(known))}")
        plans = [plan for plan in plans if plan.setup.name in args.setups]
    return [dataclasses.replace(plan, **overrides) for plan in plans]


def find_suite(path: str | None) -> Path:
    if path:
        return Path(path)
    for candidate in SUITES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise SystemExit(f"no prompt suite found at {' or '.join(SUITES)}; pass --suite PATH")


def load_results(path: Path, fresh: bool) -> dict:
    if path.is_file() and not fresh:
        results = json.loads(path.read_text())
        results["cells"] = [upgrade_cell(cell) for cell in results["cells"]]
        return results
    return {"meta": {"commands": [], "setups": []}, "cells": []}


def load_setup(setup: Setup, plans: list[Plan], args, log) -> Models:
    from ..engine.layer_search import layers_from
    from ..engine.pair import Pair
    from ..models.loading import load_model

    engine = getattr(args, "engine", None)
    target = load_model(setup.target, args.device, args.dtype, args.trust_remote_code, log=log, engine=engine)
    wanted = {d for plan in plans if plan.setup == setup for d in runnable_drafters(plan)[0]}
    draft = None
    if setup.draft and any(needs_draft_model(d) or d == AUTO for d in wanted):  # auto drafts with it too
        draft = load_model(setup.draft, target.device, target.dtype, args.trust_remote_code, log=log,
                           quantize=setup.draft_quantize, engine=engine)
    return Models(Pair(target, draft), target, draft, layers_from(setup.draft_layers, target.model))


def check_grid(plans: list[Plan], groups, args) -> None:
    """A grid with nothing to run says why (a drafter that needs --draft, a prompt filter that
    matched nothing), and a --notes file is found, before any model loads."""
    if not any(group.cells for group in groups):
        skipped = sorted({d for plan in plans for d in runnable_drafters(plan)[1]})
        why = f"{', '.join(skipped)} need(s) a draft model (--draft)" if skipped else "no prompt was selected"
        raise ValueError(f"the grid has no cells to run: {why}")
    if args.notes and not Path(args.notes).is_file():
        raise ValueError(f"--notes {args.notes}: no such file")


# What a setup's results were measured on: a rerun that finds cells of the same setup name measured
# on other models, kernels or layers would otherwise count them as its own (cells are keyed by name).
MEASURED_ON = ("target", "draft", "draft_quantize", "draft_layers", "dtype", "engine", "device")


def check_measured_on(results: dict, setup: Setup, entry: dict) -> None:
    """Refuse a setup whose finished cells (of its name) were measured on anything entry says
    otherwise; entry: what this run knows of its setup (before loading: what the options name)."""
    before = next((s for s in results["meta"]["setups"] if s["name"] == setup.name), None)
    finished = any(c["key"].startswith(f"{setup.name}|") and c["repeats"] for c in results["cells"])
    changed = [f for f in MEASURED_ON if before and f in before and f in entry and before[f] != entry[f]]
    if finished and changed:
        raise ValueError(f"the results hold {setup.name} measured with " + ", ".join(
            f"{f} {before[f]!r}" for f in changed) + " and this run has " + ", ".join(
            f"{f} {entry[f]!r}" for f in changed) + ": rerun with --fresh, another --out, or --name")


def named_setups(plans: list[Plan], args) -> dict[str, tuple[Setup, dict]]:
    """Each setup with what the options say it runs on, before anything loads (its models, and the
    engine where one is named; a dtype has aliases, and is checked once the models load)."""
    given = {"engine": args.engine} if args.engine else {}
    return {s.name: (s, {**dataclasses.asdict(s), **given}) for s in setups_of(plans)}


def record_setup(results: dict, setup: Setup, models: Models, plans: list[Plan]) -> None:
    skipped = sorted({d for plan in plans if plan.setup == setup for d in runnable_drafters(plan)[1]})
    entry = {**dataclasses.asdict(setup), "dtype": str(models.target.dtype).replace("torch.", ""),
             "engine": models.target.engine,
             "device": str(models.target.device), "skipped_drafters": skipped}
    check_measured_on(results, setup, entry)
    results["meta"]["setups"] = [s for s in results["meta"]["setups"] if s["name"] != setup.name] + [entry]


def run(plans: list[Plan], suite, results: dict, results_path: Path, args, log) -> None:
    from tqdm import tqdm

    done = {c["key"]: c for c in results["cells"]}
    todo = []
    for group in expand(plans, suite):
        cells = tuple(c for c in group.cells if len(done.get(c.key, {}).get("repeats", [])) < group.repeats)
        if cells:
            todo.append(dataclasses.replace(group, cells=cells))
    skipped = sum(len(g.cells) for g in expand(plans, suite)) - sum(len(g.cells) for g in todo)
    log(f"{sum(len(g.cells) for g in todo)} cells to run in {len(todo)} groups ({skipped} already finished)")
    total = sum((g.repeats + 1) * len(jobs_for(g.cells)) for g in todo)
    # Redrawn often on a terminal; in a log file, a line every half minute is enough.
    bar = tqdm(total=total, unit="lane", desc="bench", dynamic_ncols=True, file=sys.stderr,
               mininterval=0.2 if sys.stderr.isatty() else 30.0)
    for setup in setups_of(plans):
        groups = [g for g in todo if g.setup == setup]
        if not groups:
            continue
        try:  # (a model that cannot load: the cells finished before it are saved as they finish)
            models = load_setup(setup, plans, args, lambda m: bar.write(m))
            record_setup(results, setup, models, plans)
        except USER_ERRORS as error:
            bar.close()
            raise SystemExit(f"error: {setup.name}: {error}") from error
        for group in groups:
            bar.set_description(f"{setup.name} {group.prompt.id} T={group.temperature:g}")
            # What earlier prompts taught the pair (the cost policy's evidence, token recycling's
            # table) carries into this one, as over a session of requests; what this prompt's own
            # warm-up and lanes teach reaches none of its other lanes: each speculative lane resumes
            # the session as it was before (run_repeat), so none drafts from a table that already
            # read this very answer.
            session = models.pair.session()
            warm_up(models, group, group.cells)
            bar.update(len(jobs_for(group.cells)))
            records = [_repeat(models, group, r, args, bar, session) for r in range(group.repeats)]
            for cell in group.cells:
                done[cell.key] = {**dataclasses.asdict(cell), "key": cell.key,
                                  "repeats": [rec[cell.key] for rec in records]}
            results["cells"] = list(done.values())
            save_json(results_path, results)  # (atomic: a stopped run keeps the last finished group)
            bar.write(_group_line(group, done))
        del models
        gc.collect()
    bar.close()


def _repeat(models: Models, group, repeat: int, args, bar, session: Session) -> dict:
    """One repeat, its speculative lanes each from `session` (run_repeat), redone (up to --retries
    times) while other processes take more than --quiet-cores; if none is quiet, the quietest attempt
    is kept (its lanes record how busy the machine was)."""
    attempts = []
    for attempt in range(args.retries + 1):
        wait_for_quiet(args.wait, args.quiet_cores)
        records = run_repeat(models, group, group.cells, repeat, tick=lambda: bar.update(1), session=session)
        attempts.append((busiest(records), attempt, records))
        if attempts[-1][0] <= args.quiet_cores:
            break
        if attempt < args.retries:
            bar.total += len(jobs_for(group.cells))
            bar.write(f"{group.prompt.id} repeat {repeat}: other processes used {attempts[-1][0]:.2f} cores; "
                      "redoing it")
    records = min(attempts, key=lambda a: a[:2])[2]
    for record in records.values():
        record["attempts"] = len(attempts)
    return records


def wait_for_quiet(max_seconds: float, cores: float, poll: float = 2.0) -> None:
    waited = 0.0
    while waited < max_seconds:
        monitor = OtherLoad()
        time.sleep(poll)
        waited += poll
        used = monitor.cores()
        if used is None or used <= cores:
            return


def _group_line(group, done) -> str:
    parts = []
    for cell in group.cells:
        s = summarize_cell(done[cell.key])
        peers = " ".join(f"/{p} {v['median']:.2f}" for p, v in s["vs_peer"].items() if v)
        parts.append(f"{cell.drafter} k={cell.k} {cell.policy}: {s['speedup']['median']:.2f}x {peers}")
    first = summarize_cell(done[group.cells[0].key])
    return (f"{group.setup.name} {group.prompt.id} T={group.temperature:g}: std "
            f"{first['tokens_per_s']['standard']['median']:.2f} tok/s, std/generate "
            f"{first['standard_vs_generate']['median']:.2f}; " + "; ".join(parts))


def write_outputs(results: dict, results_path: Path, report_path: Path, args, log) -> None:
    summaries = [summarize_cell(c) for c in results["cells"] if c["repeats"]]
    figures = write_figures(summaries, results_path.parent / "figures", png=not args.no_png,
                            plotlyjs=args.plotlyjs, log=log)
    notes = Path(args.notes).read_text(encoding="utf-8") if args.notes else ""
    report_path.parent.mkdir(parents=True, exist_ok=True)
    text = report(results, summaries, figures, report_path, notes)
    report_path.write_text(keep_sections(report_path, text), encoding="utf-8")  # Spec-Bench's sections stay
    log(f"wrote {results_path}, {report_path} and {len(figures)} figures in {results_path.parent / 'figures'}")


# The grid's options that a Spec-Bench run has no use for: it always starts over, writes no figures,
# times every lane back to back without the shared-machine checks, and names its pair by its models.
GRID_ONLY = ("quick", "auto", "fresh", "setups", "notes", "no_png", "plotlyjs", "quiet_cores", "retries",
             "wait", "name", "draft_layers")


def check_spec_bench_options(parser: argparse.ArgumentParser, args) -> None:
    """Refuse, by name, a grid option given to a Spec-Bench run (it would be ignored)."""
    given = [f"--{dest.replace('_', '-')}" for dest in GRID_ONLY if getattr(args, dest) != parser.get_default(dest)]
    if given:
        raise ValueError(f"{', '.join(given)}: the grid's, not a Spec-Bench run's (it always starts over, "
                         "times its lanes back to back and writes spec_bench.json and spec_bench.md)")


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    out = Path(args.out)
    results_path = out / "results.json"
    report_path = Path(args.report) if args.report else out / "report.md"
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    try:
        if args.suite and spec_bench.is_spec_bench(args.suite):  # Spec-Bench's format: its own run and table
            check_spec_bench_options(parser, args)
            return spec_bench_run.main(args, lambda: spec_bench_pair(args, log), log)
    except USER_ERRORS as error:
        raise SystemExit(f"error: {error}") from error
    results = load_results(results_path, args.fresh)
    if not args.report_only:
        _quiet_transformers()
        try:
            suite = load_suite(find_suite(args.suite))
            plans = make_plans(args, suite)
            check_grid(plans, expand(plans, suite), args)  # before loading anything
            for setup, entry in named_setups(plans, args).values():
                check_measured_on(results, setup, entry)
        except ValueError as error:
            raise SystemExit(f"error: {error}") from error
        meta = results["meta"]
        meta["commands"].append("python -m specdec bench " + shlex.join(sys.argv[2:] if argv is None else argv))
        meta.update(started=meta.get("started") or _now(), machine=machine(), results_path=str(results_path),
                    suite=str(find_suite(args.suite)), assistant_confidence_threshold=_confidence_default(),
                    quiet_cores=args.quiet_cores, retries=args.retries)
        start = time.perf_counter()
        run(plans, suite, results, results_path, args, log)
        meta["finished"] = _now()
        meta["seconds"] = meta.get("seconds", 0) + time.perf_counter() - start
        save_json(results_path, results)
    elif not results["cells"]:
        raise SystemExit(f"no results at {results_path}")
    else:
        results["meta"]["results_path"] = str(results_path)  # the report links to where the file is now
    write_outputs(results, results_path, report_path, args, log)


def spec_bench_pair(args, log):
    """The pair a Spec-Bench run measures: --target (default the embedded SmolLM2) and --draft."""
    from ..engine.pair import Pair
    from ..models.loading import costs_file, load_model

    target = load_model(args.target or "embedded", args.device, args.dtype, args.trust_remote_code, log=log,
                        engine=args.engine)
    draft = None
    if args.draft:
        draft = load_model(args.draft, target.device, target.dtype, args.trust_remote_code, log=log,
                           quantize=args.draft_quantize, engine=args.engine)
    pair = Pair(target, draft)
    pair.remember_costs(costs_file(target, draft))
    return pair


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _confidence_default():
    from transformers import GenerationConfig

    return GenerationConfig._get_default_generation_params().get("assistant_confidence_threshold")


def _quiet_transformers() -> None:
    """generate() warns about flags it ignores in greedy mode; the bench passes them on purpose."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
