"""Every Spec-Bench run that docs/spec-bench/goals.py reads issue #22's goals off, as one row: what it
ran on, our standard decoding's speed, the overall speedup over it of auto, the draft model at k = 4
and transformers' assisted defaults (the rows the goals read; the run's table has the rest), and auto
against transformers overall and on auto's worst task. The README's table of measured results is
this script's output.

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
from goals import AUTO, EAGER_PEER, PEER, QWEN_GREEDY, QWEN_SAMPLED, SMOLLM2_GREEDY, SMOLLM2_SAMPLED  # noqa: E402
from goals import answers, committed, over, results, spec_bench  # noqa: E402

# qwen-engines is qwen-fast's run with transformers on the eager model beside it (goals.answers).
RUNS = tuple(run for run in ("qwen-engines",) + QWEN_GREEDY + QWEN_SAMPLED + SMOLLM2_GREEDY + SMOLLM2_SAMPLED
             if run != "qwen-fast")
METHODS = (("auto", AUTO), ("draft model", "draft model (k=4)"), ("transformers", PEER))


def run_row(run: str) -> str | None:
    """The run's row, or None where it has no results."""
    found = answers(run)
    if found is None:
        return None
    meta = json.loads(results(run).read_text())["meta"]
    rows = {row.method: row for row in spec_bench.leaderboard(found)}
    standard = [t for a in found if a["method"] == "standard" for t in a["turns"]]
    if not standard:  # (a run is read against its standard lane: none, nothing to read)
        return None
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
    if not ratios or "Overall" not in ratios:
        return "–", "–"
    overall = f"{ratios.pop('Overall'):.2f}x"
    eager = over(EAGER_PEER)(rows) or {}  # what a user of transformers gets: its assisted defaults, eager
    if "Overall" in eager:
        overall += f"; on the eager model {eager['Overall']:.2f}x"
    task, value = min(ratios.items(), key=lambda tv: tv[1], default=(None, None))
    return overall, f"{value:.2f}x ({task})" if task else "–"


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
