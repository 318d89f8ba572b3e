"""Running a Spec-Bench-format question file (spec_bench.py): every method answers every turn of every
sampled question after our standard decoding has, one lane at a time, and the leaderboard table is
written from the answers."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from ..engine.config import Sampling, Speculation
from ..engine.drafters import AdjacencyTable
from ..engine.pair import Pair, Request
from ..engine.timing import Clock
from . import spec_bench
from .grid import AUTO
from .meters import Forwards, machine
from .jsonl import save_json
from .report_sections import put_section


@dataclass(frozen=True)
class Method:
    label: str
    drafter: str = ""  # grid.AUTO: Pair.auto's setup, as everywhere else; "" for transformers' peer
    policy: str = "fixed"
    peer: bool = False  # transformers' assisted generation with its real defaults
    cold: bool = False  # token recycling from an empty table each turn, not the lane's session's

    @property
    def option(self) -> str:
        """The name --drafters picks this row by: its drafter's, or "transformers" for the peer."""
        return self.drafter or "transformers"


def methods(has_draft: bool, k: int) -> list[Method]:
    """Ours at k (fixed) for each drafter family the pair can run, auto, and transformers' assisted
    generation with its real defaults when there is a draft model. Token recycling three ways: its
    configured tree at k; the cost policy choosing among its tree sizes; and the latter from an empty
    table each turn, against the session's warm one."""
    recycling = Method("token recycling (cost policy)", "recycling", "cost")
    mine = [Method(f"prompt lookup (k={k})", "prompt-lookup"), Method(f"lookup-tree (k={k})", "lookup-tree"),
            Method(f"token recycling (k={k})", "recycling"), recycling,
            replace(recycling, label="token recycling (cost policy, cold table)", cold=True)]
    if has_draft:
        mine += [Method(f"draft model (k={k})", "draft-model"), Method("hybrid (cost policy)", "hybrid", "cost"),
                 Method(f"draft-tree (k={k})", "draft-tree")]
    mine.append(Method("auto", AUTO, "cost"))
    return mine + ([Method("transformers assisted (defaults)", peer=True)] if has_draft else [])


def request_for(method: Method, pair: Pair, base: Request) -> Request:
    if method.drafter == AUTO:
        return pair.auto(base)
    return replace(base, drafter=method.drafter, spec=replace(base.spec, policy=method.policy))


def timed_turn(pair: Pair, method: Method | None, request: Request, table: AdjacencyTable | None = None
               ) -> tuple[dict, list[int]]:
    """One lane over one turn: new tokens, wall seconds, tokens per target pass; and the tokens. A
    speculative lane drafts token recycling from `table`, its own (None: an empty one, a cold start)."""
    clock, ids = Clock(pair.target.device), pair.prompt_ids(request)
    if method is not None and method.peer:
        return _peer_turn(pair, request, ids, clock)
    rounds = None
    start = clock.now()
    if method is None:
        tokens, passes = [e.token for e in pair.standard(request, ids)], None
    else:
        with pair.recycling_from(table, "cold" if method.cold else ""):
            rounds = list(pair.speculative(request_for(method, pair, request), ids))
        tokens, passes = [t for r in rounds for t in r.tokens], [len(r.tokens) for r in rounds]
    seconds = clock.now() - start
    # Who drafted each round and how many tokens (auto's choices), and the most the round could draft
    # (the k asked of the drafter: a cost policy's cap, within which its stop rule chose), off the clock.
    drafts = None if rounds is None else [f"{r.source}:{len(r.drafted)}" if r.drafted else "plain" for r in rounds]
    caps = None if rounds is None else [r.k for r in rounds]
    return {"new_tokens": len(tokens), "seconds": seconds, "accept_lengths": passes, "drafts": drafts,
            "caps": caps}, tokens


def _peer_turn(pair: Pair, request: Request, ids: list[int], clock: Clock) -> tuple[dict, list[int]]:
    import torch
    from transformers import GenerationConfig

    draft = pair.draft.model
    defaults = GenerationConfig()  # restored before every call: the run writes its k back into them
    for name in ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold"):
        setattr(draft.generation_config, name, getattr(defaults, name))
    inputs = torch.tensor([ids], device=pair.target.device)
    forwards = Forwards(pair.target.model)
    start = clock.now()
    sampling = request.sampling  # the run's own sampling settings, as our lanes use them
    settings = {"do_sample": False} if sampling.greedy else {
        "do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": sampling.top_k or 0}
    if not sampling.greedy:
        torch.manual_seed(sampling.seed)
    out = pair.target.model.generate(inputs, attention_mask=torch.ones_like(inputs), assistant_model=draft,
                                     max_new_tokens=request.max_new_tokens, eos_token_id=pair.eos_ids,
                                     pad_token_id=pair.eos_ids[0], **settings)
    seconds = clock.now() - start
    passes = forwards.close()["target_forwards"]
    tokens = out[0, len(ids):].tolist()
    return {"new_tokens": len(tokens), "seconds": seconds, "accept_lengths": [len(tokens) / max(passes, 1)]}, tokens


def answer_question(pair: Pair, question: spec_bench.Question, lanes: list[Method], base: Request,
                    tables: dict[str, AdjacencyTable] | None = None, repeats: int = 1) -> list[dict]:
    """Every lane answers each turn, `repeats` times interleaved (standard, each lane; standard, each
    lane; ...); a turn's seconds are the median of its repeats, with every repeat's kept beside it.
    The history each next turn is asked after is the standard lane's.

    Each lane drafts token recycling from a table of its own (tables, by label, kept across the
    questions of a run: its session), never from one a lane before it filled with this very turn's
    answer; a cold lane from an empty one each turn. Every repeat of a turn starts from what the lanes
    had learned before it (Pair.learned, the recycling tables): a second repeat that drafted from a
    table holding this turn's own answer, or from the cost policy's evidence of it, would measure
    another thing than the first."""
    tables = {} if tables is None else tables
    answers: dict[str, list[dict]] = {spec_bench.BASELINE: [], **{m.label: [] for m in lanes}}
    history: tuple[tuple[str, str], ...] = ()
    identical: dict[str, bool] = {}
    for turn in question.turns:
        request = replace(base, prompt=turn, history=history)
        for method in lanes:
            if not method.cold and method.label not in tables:
                tables[method.label] = pair.new_recycling_table()
        # 1. What the lanes knew before this turn: each repeat starts from it (one run needs no copy).
        if repeats > 1:
            learned, saved = pair.learned(), {label: table.copy() for label, table in tables.items()}
        runs: dict[str, list[dict]] = {label: [] for label in answers}
        for repeat in range(repeats):
            if repeat:
                pair.restore_learned(learned)
                tables.update({label: table.copy() for label, table in saved.items()})
            # 2. Standard decoding, then each lane, one at a time (lanes never overlap while timed).
            run, standard = timed_turn(pair, None, request)
            runs[spec_bench.BASELINE].append(run)
            for method in lanes:
                run, tokens = timed_turn(pair, method, request, None if method.cold else tables[method.label])
                runs[method.label].append(run)
                identical.setdefault(method.label, True)
                identical[method.label] &= tokens == standard or not request.sampling.greedy
        # 3. The median repeat stands for the turn.
        for label, repeated in runs.items():
            answers[label].append(median_run(repeated))
        history = history + ((turn, pair.tokenizer.decode(standard, skip_special_tokens=True)),)
    return [{"question_id": question.id, "category": question.category, "method": label, "turns": turns,
             "identical": identical.get(label, True)} for label, turns in answers.items()]


def median_run(runs: list[dict]) -> dict:
    """One turn's repeats as one: the run of median seconds (the lower middle of an even count), with
    every repeat kept beside it (its seconds and tokens per pass) for the spread."""
    middle = sorted(runs, key=lambda run: run["seconds"])[(len(runs) - 1) // 2]
    return {**middle, "repeats": [{"seconds": run["seconds"], "accept_lengths": run["accept_lengths"],
                                   "drafts": run.get("drafts"), "caps": run.get("caps")} for run in runs]}


def chosen_questions(args) -> list[spec_bench.Question]:
    """The questions this run answers: the file's sample, or the --prompts among it."""
    questions = spec_bench.sample(spec_bench.read_questions(args.suite), args.per_category, args.sample_seed)
    if args.prompts:  # a subset of the sample by question id (a slow setup: the eager engine's peers)
        if unknown := set(args.prompts) - {q.id for q in questions}:
            raise ValueError(f"--prompts: {', '.join(sorted(unknown))} not in this sample; it has "
                             f"{', '.join(q.id for q in questions)}")
        questions = [q for q in questions if q.id in args.prompts]
    return questions


# A run's defaults: transformers' and Spec-Bench's 128 new tokens; k = 4 for the fixed-k rows; a
# sampled run's nucleus, top-p 0.9 (recorded in the results and the caption).
DEFAULT_NEW_TOKENS, DEFAULT_K, SAMPLED_TOP_P = 128, 4, 0.9


@dataclass(frozen=True)
class Settings:
    """What every turn of a run asks (all but its prompt and history), and how often: read from the
    options once, checked before any model loads."""

    base: Request
    repeats: int


def settings(args) -> Settings:
    """The run's settings from its options; a value out of range is refused by the option's name."""
    temperature = args.temperatures[0] if args.temperatures else 0.0
    sampling = _by_option("--temperatures", lambda: Sampling(temperature=temperature, top_p=SAMPLED_TOP_P)
                          if temperature else Sampling())
    spec = _by_option("--k", lambda: Speculation(k=args.k[0] if args.k else DEFAULT_K))  # k in [1, 16], as generate
    new_tokens = DEFAULT_NEW_TOKENS if args.max_new_tokens is None else args.max_new_tokens
    repeats = 1 if args.repeats is None else args.repeats
    for name, value in (("--max-new-tokens", new_tokens), ("--repeats", repeats), ("--per-category", args.per_category)):
        if value is not None and not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return Settings(Request("", new_tokens, sampling, spec), repeats)


def _by_option(option: str, make):
    """make(), its ValueError prefixed with the option whose value it checked."""
    try:
        return make()
    except ValueError as error:
        raise ValueError(f"{option}: {error}") from None


def check_options(args) -> None:
    """The grid's options that mean something here, checked before any model loads: one k, one
    temperature, drafters by the names the table's rows go by, counts of at least 1. Each row runs
    its own policy."""
    if args.policies:
        raise ValueError("--policies is the grid's: a Spec-Bench run gives each method its own policy "
                         "(fixed k, the cost policy for auto, hybrid and token recycling's cost row)")
    for name, values in (("--k", args.k), ("--temperatures", args.temperatures)):
        if values and len(values) > 1:
            raise ValueError(f"{name}: a Spec-Bench run takes one value, got {len(values)}")
    known = {m.option for m in methods(True, DEFAULT_K)}
    if args.drafters and (unknown := set(args.drafters) - known):
        raise ValueError(f"--drafters: unknown {', '.join(sorted(unknown))}; a Spec-Bench run has "
                         f"{', '.join(sorted(known))}")
    settings(args)


def check_context(pair: Pair, questions: list[spec_bench.Question], base: Request) -> None:
    """Every turn's prompt fits the models' context after the turns before it (their answers counted
    as empty: the most any run can fit), checked before anything is timed, so a turn too long for the
    model is refused by its question at once, not after the questions before it have run."""
    for question in questions:
        history: tuple[tuple[str, str], ...] = ()
        for number, turn in enumerate(question.turns, 1):
            request = replace(base, prompt=turn, history=history)
            try:
                pair.check_context(len(pair.encode(request)), request)
            except ValueError as error:
                raise ValueError(f"question {question.id}, turn {number}: {error}") from None
            history += ((turn, ""),)


def run(args, questions: list[spec_bench.Question], pair: Pair, log, save=None) -> dict:
    """Every lane over every question. save(results so far), where given, after each question: a
    run stopped halfway (a turn that outgrows the context once earlier answers are in it, a user's
    Ctrl-C) keeps what it finished."""
    run_settings = settings(args)
    base = run_settings.base
    lanes = chosen_lanes(args, pair, base.spec.k)
    check_context(pair, questions, base)
    warm_up(pair, lanes, replace(base, prompt=questions[0].turns[0]), questions[0].id)
    log(f"the cost policy's saved costs ({pair.costs_file}): {pair.costs_status}")
    answers, tables = [], {}  # each lane's recycling table, warming over the run (answer_question)
    for number, question in enumerate(questions, 1):
        log(f"[{number}/{len(questions)}] {question.id} ({question.category}, {len(question.turns)} turns)")
        try:
            answers += answer_question(pair, question, lanes, base, tables, run_settings.repeats)
        except ValueError as error:  # (the context, with this question's earlier answers in it)
            kept = f" ({number - 1} questions before it saved)" if save and number > 1 else ""
            raise ValueError(f"question {question.id}: {error}{kept}") from None
        if save:
            save({"meta": meta(args, pair, questions[:number], run_settings, len(questions)), "answers": list(answers)})
    return {"meta": meta(args, pair, questions, run_settings), "answers": answers}


def warm_up(pair: Pair, lanes: list[Method], first: Request, question_id: str) -> None:
    """Every lane briefly on the first turn, off the clock: one-time costs (kernels, the verify-cost
    table, transformers' first assisted call) land here, not in the first timed answer. Our lanes
    learn nothing from it about this answer (Pair.warm_up); transformers' peer keeps no state."""
    short = replace(first, max_new_tokens=min(4, first.max_new_tokens))
    for method in lanes:
        try:  # (auto's warm-up checks the context with its own, deeper k_max)
            if method.peer:
                _peer_turn(pair, short, pair.prompt_ids(short), Clock(pair.target.device))
            else:
                pair.warm_up(request_for(method, pair, first))
        except ValueError as error:
            raise ValueError(f"question {question_id}, turn 1 ({method.label}): {error}") from None


def chosen_lanes(args, pair: Pair, k: int) -> list[Method]:
    """The methods the pair can run, or the --drafters among them (each by its drafter's name;
    "auto" and "transformers" name those two rows)."""
    lanes = methods(pair.draft is not None and pair.tokenizer_mismatch is None, k)
    if args.drafters:
        lanes = [m for m in lanes if m.option in args.drafters]
        if missing := set(args.drafters) - {m.option for m in lanes}:
            raise ValueError(f"--drafters {', '.join(sorted(missing))}: needs a draft model with the target's "
                             f"tokenizer{_why_not(pair)}")
    return lanes


def _why_not(pair: Pair) -> str:
    """Why the pair has no same-tokenizer draft: none given (--draft), or one of another tokenizer."""
    if pair.draft is None:
        return " (--draft)"
    return f"; {pair.draft.name}'s differs ({pair.tokenizer_mismatch})"


def meta(args, pair: Pair, questions: list[spec_bench.Question], run_settings: Settings,
         planned: int | None = None) -> dict:
    """The run's description; planned: how many questions a partial run (questions so far) set out to answer."""
    per_task = {task: sum(q.task == task for q in questions) for task in spec_bench.tasks_of(q.category for q in questions)}
    sampling = run_settings.base.sampling
    return {"machine": machine(), "suite": str(args.suite), "per_category": args.per_category,
            "prompts": list(args.prompts) if args.prompts else None,
            "sample_seed": args.sample_seed, "questions": len(questions), "per_task": per_task,
            **({"planned": planned} if planned is not None and planned != len(questions) else {}),
            "repeats": run_settings.repeats, "max_new_tokens": run_settings.base.max_new_tokens,
            "temperature": sampling.temperature, "top_p": sampling.top_p, "k": run_settings.base.spec.k,
            "target": pair.target.name, "draft": pair.draft.name if pair.draft else None,
            "draft_quantize": pair.draft.quantize if pair.draft else None, "dtype": str(pair.target.dtype),
            "engine": pair.target.engine, "device": str(pair.target.device),
            "saved_costs": pair.costs_status}  # whether the cost policy started from an earlier run's


def caption(meta: dict, answers: Sequence[dict] = ()) -> str:
    """The table's caption; with the answers, it says how fast our standard decoding ran, so two runs
    on hosts the CPU's name does not tell apart (the same 2-core EPYC has read 0.1 and 0.3 s a step
    of the same model) are not read as one."""
    pair = meta["target"] + (f" + {meta['draft']}" + (f" ({meta['draft_quantize']})" if meta["draft_quantize"] else "")
                             if meta["draft"] else " (no draft model)")
    sizes = ", ".join(f"{task} {n}" for task, n in meta["per_task"].items())
    return (f"**Spec-Bench-style leaderboard.** {pair}; {meta['device']}, {meta['dtype']}, engine {meta['engine']}; "
            f"{meta['machine']['cpu']}, {meta['machine']['cores']} cores{_standard_speed(answers)}; "
            f"temperature {meta['temperature']}{_nucleus(meta)}; "
            f"{meta['max_new_tokens']} new tokens a turn; {_repeats(meta)}{meta['questions']} questions from {meta['suite']} "
            f"({sizes}; {_drawn(meta)}). Speedup over our standard "
            "decoding as Spec-Bench's evaluation/speed.py computes it.")


def _nucleus(meta: dict) -> str:
    """", top-p P" where a sampled run cut the nucleus (results from before top_p was recorded: 0.9)."""
    top_p = meta.get("top_p", SAMPLED_TOP_P if meta["temperature"] else 1.0)
    return f", top-p {top_p:g}" if meta["temperature"] and top_p < 1.0 else ""


def _drawn(meta: dict) -> str:
    drawn = "every question" if meta["per_category"] is None else \
        f"{meta['per_category']} per category, seed {meta['sample_seed']}"
    return drawn + (f"; a partial run: {meta['questions']} of {meta['planned']} questions" if "planned" in meta else "")


def _standard_speed(answers: Sequence[dict]) -> str:
    """", our standard decoding N tokens/s" over every baseline turn, or nothing without one."""
    turns = [t for a in answers if a["method"] == spec_bench.BASELINE for t in a["turns"]]
    seconds = sum(t["seconds"] for t in turns)
    return f", our standard decoding {sum(t['new_tokens'] for t in turns) / seconds:.2f} tokens/s" if seconds else ""


def _repeats(meta: dict) -> str:
    repeats = meta.get("repeats", 1)
    return f"each turn the median of {repeats} interleaved repeats; " if repeats > 1 else "one run a turn; "


def report(results: dict) -> str:
    rows = spec_bench.leaderboard(results["answers"])
    different = sorted({a["method"] for a in results["answers"] if not a.get("identical", True)})
    note = f"\n\nGreedy answers that differed from standard decoding: {', '.join(different)}." if different else ""
    return spec_bench.table(rows, caption(results["meta"], results["answers"])) + note


def main(args, pair_loader, log=lambda m: print(m, file=sys.stderr)) -> None:
    out = Path(args.out)
    path = out / "spec_bench.json"
    if args.report_only:
        results = json.loads(path.read_text())
    else:
        check_options(args)
        questions = chosen_questions(args)  # a file's every error before a model loads
        check_writable(out, Path(args.report) if args.report else None)
        # Questions so far go beside the results, which a finished run alone replaces (an earlier
        # run's complete file is not lost to one stopped halfway).
        partial = out / "spec_bench.partial.json"
        if path.exists():  # (one --out per setup: a second setup's run would replace the first's unsaid)
            log(f"--out {out} holds a finished run's results ({_described(path)}): "
                "this run replaces them when it finishes")
        results = run(args, questions, pair_loader(), log, lambda so_far: save_json(partial, so_far))
        save_json(path, results)
        partial.unlink(missing_ok=True)
    text = report(results)
    (out / "spec_bench.md").write_text(text + "\n")
    if args.report:  # e.g. docs/BENCHMARKS.md: this pair's section of it, the rest kept
        put_section(Path(args.report), section_key(results["meta"]),
                    f"## Spec-Bench-style leaderboard: {section_key(results['meta'])}\n\n"
                    f"Results: `{path}`.\n\n{text}")
    print(text)


def _described(path: Path) -> str:
    """A finished run's results at path in a few words: its setup (section_key), questions and suite."""
    try:
        earlier = json.loads(path.read_text())["meta"]
        return f"{section_key(earlier)}, {earlier['questions']} questions from {earlier['suite']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a file this version cannot read"


def check_writable(out: Path, report: Path | None) -> None:
    """The output folder (made now) and the report's path take files, checked before a model loads:
    an error after the run would lose it."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out {out}: cannot make the folder ({error.strerror})") from None
    if not os.access(out, os.W_OK):
        raise ValueError(f"--out {out}: cannot write there")
    if report is not None and report.is_dir():
        raise ValueError(f"--report {report}: a folder; give a Markdown file's path")
    if report is not None and not _writable(report):
        raise ValueError(f"--report {report}: cannot write there")


def _writable(path: Path) -> bool:
    """Whether path (a file, or what its missing folders would be made in) can be written."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return os.access(path, os.W_OK)


def section_key(meta: dict) -> str:
    """The pair a leaderboard measured, and its temperature when it sampled, as its report section's
    name: a sampled run of a pair has a section beside its greedy one."""
    quantize = f" ({meta['draft_quantize']})" if meta.get("draft_quantize") else ""
    sampled = f", temperature {meta['temperature']}" if meta.get("temperature") else ""
    return meta["target"] + (f" + {meta['draft']}{quantize}" if meta.get("draft") else " alone") + sampled
