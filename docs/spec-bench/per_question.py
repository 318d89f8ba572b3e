"""Per question, one method's seconds against another's, from a bench run's spec_bench.json: the
table behind docs/spec-bench/translation/README.md (and usable on any run's folder).

    python docs/spec-bench/per_question.py docs/spec-bench/translation [more folders] \
        [--methods auto,"transformers assisted (defaults)"]

Each cell is the median of the run's repeats, summed over a question's turns, as the leaderboard
reads it; a ratio is the second method's seconds over the first's (above 1: the first is faster).
Several folders (runs of the same questions) give one column pair each, and a last row sums them.
"""
import json
import sys
from pathlib import Path


def seconds(folder: str, methods: tuple[str, str]) -> dict[str, tuple[int, float, float]]:
    """question id -> (new tokens, first method's seconds, second's)."""
    by_question: dict[str, dict[str, tuple[int, float]]] = {}
    for answer in json.loads((Path(folder) / "spec_bench.json").read_text())["answers"]:
        turns = answer["turns"]
        by_question.setdefault(answer["question_id"], {})[answer["method"]] = (
            sum(t["new_tokens"] for t in turns), sum(t["seconds"] for t in turns))
    return {q: (lanes[methods[0]][0], lanes[methods[0]][1], lanes[methods[1]][1])
            for q, lanes in by_question.items() if all(m in lanes for m in methods)}


def main(folders: list[str], methods: tuple[str, str]) -> None:
    runs = [seconds(folder, methods) for folder in folders]
    print(f"| question | tokens | " + " | ".join(f"{f}: {methods[0]} / {methods[1]}" for f in folders) + " |")
    print("|---|---|" + "---|" * len(folders))
    for question in runs[0]:
        cells = [f"{run[question][1]:.2f} / {run[question][2]:.2f} s: **{run[question][2] / run[question][1]:.2f}x**"
                 if question in run else "–" for run in runs]
        print(f"| {question} | {runs[0][question][0]} | " + " | ".join(cells) + " |")
    sums = [(sum(a for _, a, _ in run.values()), sum(b for _, _, b in run.values())) for run in runs]
    print("| summed | | " + " | ".join(f"{a:.1f} / {b:.1f} s: **{b / a:.2f}x**" for a, b in sums) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    methods = ("auto", "transformers assisted (defaults)")
    if "--methods" in args:
        i = args.index("--methods")
        methods = tuple(args[i + 1].split(","))
        del args[i:i + 2]
    if not args or len(methods) != 2:
        sys.exit(__doc__)
    main(args, methods)
