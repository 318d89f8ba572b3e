"""Every Spec-Bench run in docs/spec-bench as one row: what it ran on, our standard decoding's speed,
each method's overall speedup over it, and auto against transformers' assisted defaults overall and
on its worst task. The README's table of measured results is this script's output.

    .venv/bin/python docs/spec-bench/latest.py            (run.sh report runs it into docs/SPEC-BENCH.md)

Figures are Spec-Bench's arithmetic (spec_bench.leaderboard, as goals.py reads them): a method's
overall speedup is the mean of its per-question speeds over the mean of our standard decoding's; auto
over transformers is the ratio of the two rows' speedups. "Standard" is our standard decoding's new
tokens over its seconds, summed over the run's turns. A task of one question is one answer's worth.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goals import AUTO, EAGER_PEER, PEER, QWEN_GREEDY, QWEN_SAMPLED, SMOLLM2_GREEDY  # noqa: E402
from goals import answers, committed, over, results, spec_bench  # noqa: E402

# qwen-engines is qwen-fast's run with transformers on the eager model beside it (goals.answers).
RUNS = tuple(run for run in dict.fromkeys(("qwen-engines",) + QWEN_GREEDY + QWEN_SAMPLED + SMOLLM2_GREEDY
                                         + ("smollm2-sampled", "smollm2-sampled-other-half")) if run != "qwen-fast")
METHODS = (("auto", AUTO), ("draft model", "draft model (k=4)"), ("transformers", PEER))


def run_row(run: str) -> str | None:
    """The run's row, or None where it has no results."""
    found = answers(run)
    if found is None:
        return None
    meta = json.loads(results(run).read_text())["meta"]
    rows = {row.method: row for row in spec_bench.leaderboard(found)}
    standard = [t for a in found if a["method"] == "standard" for t in a["turns"]]
    speed = sum(t["new_tokens"] for t in standard) / sum(t["seconds"] for t in standard)
    cells = [f"{rows[m].speedups['Overall']:.2f}x" if m in rows and rows[m].speedups["Overall"] else "–"
             for _, m in METHODS]
    questions = len({a["question_id"] for a in found})
    return (f"| `run.sh {run}` | {setup(meta)} | {questions} | {meta['machine']['cpu']} | {committed(run)} "
            f"| {speed:.2f} | " + " | ".join(cells) + " | " + " | ".join(against_transformers(rows)) + " |")


def setup(meta: dict) -> str:
    target = {"embedded": "SmolLM2-135M"}.get(meta["target"], meta["target"])
    draft = f" + {meta['draft']} ({meta.get('draft_quantize') or 'fp32'})" if meta.get("draft") else ""
    return target + draft + (f", T = {meta['temperature']:g}" if meta.get("temperature") else ", greedy")


def against_transformers(rows: dict) -> tuple[str, str]:
    """auto over transformers' defaults overall (and over them on the eager model, where the run has
    them), and on auto's worst task."""
    ratios = over(PEER)(rows)
    if ratios is None:
        return "–", "–"
    overall = f"{ratios.pop('Overall'):.2f}x"
    if EAGER_PEER in rows:  # what a user of transformers gets: its assisted defaults on the eager model
        overall += f"; on the eager model {over(EAGER_PEER)(rows)['Overall']:.2f}x"
    task, value = min(ratios.items(), key=lambda tv: tv[1])
    return overall, f"{value:.2f}x ({task})"


def main() -> None:
    print("| run | setup | questions | CPU | results committed | standard tok/s | "
          + " | ".join(name for name, _ in METHODS) + " | auto / transformers | worst task, auto / transformers |")
    print("|---" * (8 + len(METHODS)) + "|")
    for run in RUNS:
        row = run_row(run)
        if row:
            print(row)


if __name__ == "__main__":
    main()
