"""One leaderboard from two Spec-Bench runs of the same pair and questions on two engines (issue #22:
auto against transformers on the eager model, what a user gets, as well as on our fast one).

    .venv/bin/python docs/spec-bench/engines.py docs/spec-bench/qwen-fast docs/spec-bench/qwen-eager \
        docs/spec-bench/qwen-engines

The first run's standard decoding stays the baseline of every row; the second run's lanes join as
rows of their own, named with their engine ("transformers assisted (defaults), eager engine"), its
standard decoding included, so each row's speedup is over our standard decoding on the first run's
engine. The two runs ran one after the other on one machine, so their rows also differ by whatever
the machine did in between: the caption says when each ran.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec.bench import spec_bench_run  # noqa: E402


def merged(first: dict, second: dict) -> dict:
    """The first run's answers, then the second's under labels that name its engine; only questions
    both ran."""
    engine = second["meta"]["engine"]
    ids = {a["question_id"] for a in first["answers"]} & {a["question_id"] for a in second["answers"]}
    if not ids:
        raise SystemExit("the two runs share no question")
    renamed = [{**a, "method": f"{a['method']}, {engine} engine"} for a in second["answers"] if a["question_id"] in ids]
    return {"meta": first["meta"], "second_meta": second["meta"],
            "answers": [a for a in first["answers"] if a["question_id"] in ids] + renamed}


def main(first_dir: str, second_dir: str, out_dir: str) -> None:
    first, second = (json.loads((Path(d) / "spec_bench.json").read_text()) for d in (first_dir, second_dir))
    results = merged(first, second)
    text = spec_bench_run.report(results) + (
        f"\n\nRows marked \"{second['meta']['engine']} engine\" come from a second run on the "
        f"{second['meta']['engine']} engine ({second_dir}, {_repeats(second['meta'])}), the rest from {first_dir}; "
        f"every speedup is over the first run's standard decoding on the {first['meta']['engine']} engine.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec_bench.md").write_text(text + "\n")
    print(text)


def _repeats(meta: dict) -> str:
    return f"{meta.get('repeats', 1)} repeat(s) a turn"


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
