"""How much the warm-up's verify-cost table moves between takes a minute apart: each width timed
once, back to back (the table before 2026-11-26), against SWEEPS interleaved sweeps with each width's
median (verify_costs.measure_verify_costs now). Prints each table in steps (v(n) / v(1)) and, per
width, the range of the steps over the takes: what the policy's choice of k reads.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/verify_table_noise.py [MODEL] [TAKES] > docs/bench-auto/verify_table_noise.txt
"""
import statistics
import sys

from specdec import load_model
from specdec.engine.kvcache import CachedModel
from specdec.engine.timing import Clock
from specdec.engine.verify_costs import SWEEPS, WIDTHS, VerifyCosts, measure_verify_costs

PROMPT = ("Answer the question using the passages. The Rhine rises in the Swiss Alps and flows into the North Sea "
          "in the Netherlands. The Rhine is about 1,230 kilometres long and passes through Basel, Cologne and Rotterdam.")


def back_to_back(target: CachedModel, context: list[int]) -> VerifyCosts:
    """The old table: per width, one untimed pass and one timed, widths one after another."""
    clock, seconds = Clock(target.device), []
    filler = (context * (max(WIDTHS) // len(context) + 1))[: max(WIDTHS)]
    target.reset()
    target.logits(list(context), 1)
    for width in WIDTHS:
        for attempt in range(2):
            target.crop(len(context))
            start = clock.now()
            target.logits(list(context) + filler[:width], width)
        seconds.append(clock.now() - start)
    target.reset()
    return VerifyCosts(WIDTHS, tuple(seconds), len(context))


def main() -> None:
    spec = sys.argv[1] if len(sys.argv) > 1 else "qwen-coder-1.5b"
    takes = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    model = load_model(spec, device="cpu", log=lambda m: None)
    lane, context = CachedModel(model.model), model.tokenizer(PROMPT)["input_ids"]
    tables = {"one pass a width, back to back": [], f"median of {SWEEPS} interleaved sweeps": []}
    print(f"{spec}, engine {model.engine}, context {len(context)} tokens; {takes} takes of each, alternating")
    for _ in range(takes):
        for name, measure in zip(tables, (back_to_back, measure_verify_costs)):
            table = measure(lane, context)
            tables[name].append(table)
            print(f"  {name:36s} v(1) {table.at(1) * 1000:4.0f} ms; steps " +
                  " ".join(f"{w}:{table.steps(w):.2f}" for w in WIDTHS), flush=True)
    for name, taken in tables.items():
        spread = {w: max(t.steps(w) for t in taken) - min(t.steps(w) for t in taken) for w in WIDTHS[1:]}
        print(f"{name}: range of steps over the takes " + " ".join(f"{w}:{r:.2f}" for w, r in spread.items()) +
              f"; mean {statistics.fmean(spread.values()):.2f}")


if __name__ == "__main__":
    main()
