"""Spec-Bench (Xia et al., ACL 2024 Findings) in the bench: its question format, its six tasks, its
two-turn conversations and its leaderboard's arithmetic.

    python -m specdec bench --suite question.jsonl --per-category 2 --target qwen-coder-1.5b --draft qwen-coder-0.5b

Format. One question a line, {"question_id", "category", "turns": [...]}; a file is read as Spec-Bench's
when its first line has those keys (bench/grid.py reads the project's own format otherwise). Spec-Bench's
480 questions are other people's text: specdec ships its own sample in the format
(bench/prompts/spec_bench_sample.jsonl, short prompts; bench/prompts/spec_bench_long.jsonl, a summary and
a RAG question at Spec-Bench's prompt lengths, ~750 tokens); download data/spec_bench/question.jsonl from the Spec-Bench
repository and pass it with --suite to run the real one. --per-category N draws N questions of each
category with a fixed seed (--sample-seed), not the first N.

Tasks, as Spec-Bench's evaluation/speed.py groups them: the eight MT-Bench categories (writing,
roleplay, reasoning, math, coding, extraction, stem, humanities) are "Multi-turn Conversation";
translation, summarization, qa, math_reasoning and rag are the other five.

Conversations. A second turn is asked after the first turn's answer, with the chat template (as
Spec-Bench's inference scripts do). The answer that goes into the history is our standard lane's,
for every method: each method then answers the same conversation. Under greedy decoding every
method's first answer is that answer anyway, token for token (the tests check it).

Arithmetic, as evaluation/speed.py computes it: a question's speed is its new tokens over its wall
seconds, summed over its turns; a task's speedup is the mean of the method's speeds over the task's
questions divided by the mean of the baseline's (our standard decoding); "#Mean Accepted Tokens" is
the mean, over every target pass of the method, of the tokens that pass committed (1.00 for plain
decoding). Our own statistics sit beside it: the median and range of the per-question ratios.
"""
from __future__ import annotations

import json
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

from . import jsonl

MT_BENCH = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
TASKS: dict[str, tuple[str, ...]] = {
    "Multi-turn Conversation": MT_BENCH, "Translation": ("translation",), "Summarization": ("summarization",),
    "Question Answering": ("qa",), "Mathematical Reasoning": ("math_reasoning",),
    "Retrieval-augmented Generation": ("rag",),
}
KEYS = {"question_id", "category", "turns"}
BASELINE = "standard"
SAMPLE = Path(__file__).parent / "prompts" / "spec_bench_sample.jsonl"
LONG_SAMPLE = Path(__file__).parent / "prompts" / "spec_bench_long.jsonl"  # the two tasks whose prompts are long
PUBLISHED = ("Published for context only (Spec-Bench leaderboard, Vicuna-7B, greedy, batch 1, A100): EAGLE-2 2.36x, "
             "PLD 1.66x, SpS 1.52x, Lookahead 1.34x overall; on an RTX 3090 SpS 1.79x, PLD 1.64x. Other models, "
             "other hardware: not a like-for-like comparison.")


def task_of(category: str) -> str:
    """A category's Spec-Bench task; a category of none of them (a file of one's own) is its own task."""
    return next((task for task, categories in TASKS.items() if category in categories), category)


def tasks_of(categories) -> dict[str, tuple[str, ...]]:
    """Spec-Bench's six tasks, then any other category among `categories` as a task of its own, in the
    order first seen: the leaderboard's columns."""
    return {**TASKS, **{c: (c,) for c in dict.fromkeys(categories) if task_of(c) == c}}


@dataclass(frozen=True)
class Question:
    id: str
    category: str
    turns: tuple[str, ...]

    @property
    def task(self) -> str:
        return task_of(self.category)


def is_spec_bench(path: str | Path) -> bool:
    """Spec-Bench's format when the first object has a key only it uses (question_id or turns; the
    project's own suites have id and prompt); read_questions then names whatever else it lacks."""
    for _, row in jsonl.rows(path):
        return bool({"question_id", "turns"} & set(row))
    return False


def read_questions(path: str | Path) -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, row in jsonl.rows(path):
        where = f"{path}:{number}"
        if missing := sorted(KEYS - set(row)):
            raise ValueError(f"{where}: a Spec-Bench question needs question_id, category and turns; "
                             f"missing {', '.join(missing)}")
        turns, category = row["turns"], row["category"]
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
            raise ValueError(f"{where}: turns must be a non-empty list of non-empty turns (strings), "
                             f"got {json.dumps(turns)[:60]}")
        if not isinstance(category, str) or not category.strip():
            raise ValueError(f"{where}: category must be a non-empty string, got {json.dumps(category)[:60]}")
        question_id = str(row["question_id"])
        if question_id in seen:  # the leaderboard divides each answer by its question's baseline
            raise ValueError(f"{where}: question_id {question_id} is line {seen[question_id]}'s too; ids must be unique")
        seen[question_id] = number
        questions.append(Question(question_id, category, tuple(turns)))
    if not questions:
        raise ValueError(f"{path}: no questions")
    return questions


def sample(questions: list[Question], per_category: int | None, seed: int = 0) -> list[Question]:
    """per_category questions of each category, drawn with a fixed seed; all when None."""
    if per_category is None:
        return list(questions)
    rng, picked = random.Random(seed), []
    for category in dict.fromkeys(q.category for q in questions):
        pool = [q for q in questions if q.category == category]
        picked += rng.sample(pool, min(per_category, len(pool)))
    return picked


# --- the leaderboard's arithmetic -----------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    method: str
    speedups: dict[str, float | None]  # task -> speedup, "Overall" included
    mean_accepted: float | None
    ratios: tuple[float, ...]  # per question: its speed over the baseline's on the same question


def question_speed(answer: dict) -> float:
    """New tokens over wall seconds, summed over the question's turns (speed.py's per-question speed)."""
    return sum(t["new_tokens"] for t in answer["turns"]) / sum(t["seconds"] for t in answer["turns"])


def leaderboard(answers: list[dict]) -> list[Row]:
    """One row per method, baseline first. answers: {"question_id", "category", "method", "turns":
    [{"new_tokens", "seconds", "accept_lengths"}]} (accept_lengths: tokens committed per target pass;
    None where a method does not report them)."""
    methods = list(dict.fromkeys([BASELINE] + [a["method"] for a in answers]))
    base = {a["question_id"]: question_speed(a) for a in answers if a["method"] == BASELINE}
    tasks = tasks_of(a["category"] for a in answers)
    rows = []
    for method in methods:
        mine = [a for a in answers if a["method"] == method and a["question_id"] in base]
        speedups = {task: _speedup(mine, base, set(cats)) for task, cats in tasks.items()}
        speedups["Overall"] = _speedup(mine, base, None)
        passes = [n for a in mine for t in a["turns"] for n in (t.get("accept_lengths") or [])]
        accepted = statistics.fmean(passes) if passes else None
        ratios = tuple(question_speed(a) / base[a["question_id"]] for a in mine)
        rows.append(Row(method, speedups, 1.0 if method == BASELINE else accepted, ratios))
    return rows


def _speedup(mine: list[dict], base: dict[str, float], categories: set[str] | None) -> float | None:
    chosen = [a for a in mine if categories is None or a["category"] in categories]
    if not chosen:
        return None
    return statistics.fmean(map(question_speed, chosen)) / statistics.fmean(base[a["question_id"]] for a in chosen)


def table(rows: list[Row], caption: str) -> str:
    tasks = [task for task in (rows[0].speedups if rows else TASKS) if task != "Overall"]
    columns = tasks + ["#Mean Accepted Tokens", "Overall", "per question: median (range)"]
    fmt = lambda x: "–" if x is None else f"{x:.2f}x"  # noqa: E731
    lines = [caption, "", "| method | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for row in rows:
        spread = (f"{statistics.median(row.ratios):.2f}x ({min(row.ratios):.2f}–{max(row.ratios):.2f})"
                  if row.ratios else "–")
        accepted = "–" if row.mean_accepted is None else f"{row.mean_accepted:.2f}"
        lines.append(f"| {row.method} | " + " | ".join(fmt(row.speedups[t]) for t in tasks)
                     + f" | {accepted} | **{fmt(row.speedups['Overall'])}** | {spread} |")
    return "\n".join(lines + ["", PUBLISHED])
