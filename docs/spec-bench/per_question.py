"""Per question, one method's speed against another's, from a bench run's spec_bench.json: the
tables behind docs/spec-bench/translation/README.md (and usable on any run's folder).

    python docs/spec-bench/per_question.py docs/spec-bench/translation [more folders] \
        [--methods auto,"transformers assisted (defaults)"]

Each cell is a method's new tokens over its seconds (the median of the run's repeats), summed over
a question's turns, as the leaderboard reads it; the ratio is the first method's speed over the
second's (above 1: the first is faster). Speeds, not seconds: sampled, each method writes its own
answer (greedy, every method's tokens are the same, and the ratio is the seconds' ratio). Several
folders (runs of the same questions) give one column each, and a last row sums tokens and seconds.
"""
import json
import sys
from pathlib import Path


Lane = tuple[int, float]  # (new tokens, seconds)


def lanes(folder: str, methods: tuple[str, str]) -> dict[str, tuple[Lane, Lane]]:
    """question id -> both methods' (new tokens, seconds)."""
    by_question: dict[str, dict[str, Lane]] = {}
    for answer in json.loads((Path(folder) / "spec_bench.json").read_text())["answers"]:
        turns = answer["turns"]
        by_question.setdefault(answer["question_id"], {})[answer["method"]] = (
            sum(t["new_tokens"] for t in turns), sum(t["seconds"] for t in turns))
    return {q: (found[methods[0]], found[methods[1]])
            for q, found in by_question.items() if all(m in found for m in methods)}


def cell(first: Lane, second: Lane) -> str:
    speeds = first[0] / first[1], second[0] / second[1]
    return f"{speeds[0]:.2f} / {speeds[1]:.2f} tok/s: **{speeds[0] / speeds[1]:.2f}x**"


def main(folders: list[str], methods: tuple[str, str]) -> None:
    runs = [lanes(folder, methods) for folder in folders]
    for folder, run in zip(folders, runs):
        if not run:
            sys.exit(f"{folder}: no question has both {methods[0]!r} and {methods[1]!r} (--methods takes the "
                     "method names of its spec_bench.md)")
    print("| question | " + " | ".join(f"{f}: {methods[0]} / {methods[1]}" for f in folders) + " |")
    print("|---|" + "---|" * len(folders))
    for question in runs[0]:
        print(f"| {question} | " + " | ".join(cell(*run[question]) if question in run else "–" for run in runs) + " |")
    summed = [tuple((sum(pair[i][0] for pair in run.values()), sum(pair[i][1] for pair in run.values()))
                    for i in (0, 1)) for run in runs]
    print("| summed | " + " | ".join(cell(*pair) for pair in summed) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    methods = ("auto", "transformers assisted (defaults)")
    if "--methods" in args:
        i = args.index("--methods")
        methods = tuple(args[i + 1].split(",")) if i + 1 < len(args) else ()
        del args[i:i + 2]
    if not args or len(methods) != 2:
        sys.exit(__doc__)
    main(args, methods)
