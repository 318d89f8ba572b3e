"""Tried, not kept: token recycling's table kept across processes, as the cost models are
(Pair.remember_costs). Today a new process (each CLI run, a restarted Space) drafts token recycling
from an empty table; the table belongs to the pair, not the request, but dies with the process.

The A/B: SmolLM2-135M-Instruct (auto: prompt lookup, its tree and token recycling; greedy, 128 tokens)
over ab_session.py's session (21 turns), interleaved turn by turn, each lane with its own cost
evidence (Pair.recycling_from's evidence name). "cold": every turn drafts from an empty table, as a
new process would. "warm": one table, first filled by auto's answers to the 20 prompts of
../shared/prompts/bench.jsonl (other text than the session's), then growing turn by turn, as a
table saved after each run would.

Result (table_persist_ab.txt, the 2-core AVX2 host): warm 25.25 against cold 24.73 tokens/s (1.02x),
1.98 against 1.90 tokens a pass; per turn both ways (0.89x to 1.22x). A bigram table learned on
other text adds little beside what the context offers each node (recycling.py, "The context"), so
the table stays the process's: saving 4-10 MB a pair after every run is not worth 2%.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/table_persist_ab.py > docs/bench-auto/table_persist_ab.txt
"""
import json
import time
from dataclasses import replace
from pathlib import Path

from ab_session import BASE, session_turns, smollm2_pair, timed

PROMPTS = Path(__file__).resolve().parents[3] / "shared" / "prompts" / "bench.jsonl"


def main() -> None:
    pair = smollm2_pair()
    turns = session_turns(pair)
    pair.warm_up(pair.auto(turns[0][1]))
    warm = pair.new_recycling_table()
    start = time.perf_counter()
    with pair.recycling_from(warm, "warm"):
        for line in PROMPTS.read_text().splitlines():
            timed(pair, pair.auto(replace(BASE, prompt=json.loads(line)["prompt"])))
    print(f"warmed on bench.jsonl in {time.perf_counter() - start:.0f} s", flush=True)
    totals = {"cold": [0, 0.0, 0], "warm": [0, 0.0, 0]}
    for i, (name, request) in enumerate(turns):
        row = []
        for lane in ("cold", "warm") if i % 2 == 0 else ("warm", "cold"):  # interleaved, order alternating
            with pair.recycling_from(None if lane == "cold" else warm, lane):
                tokens, seconds, rounds = timed(pair, pair.auto(request))
            for j, value in enumerate((tokens, seconds, rounds)):
                totals[lane][j] += value
            row.append(f"{lane} {tokens / seconds:5.1f} ({tokens / rounds:.1f}/pass)")
        print(name, " | ".join(sorted(row)), flush=True)
    for lane, (tokens, seconds, rounds) in totals.items():
        print(f"{lane}: {tokens / seconds:.2f} tok/s, {tokens / rounds:.2f} tokens/pass, {seconds:.1f} s")


if __name__ == "__main__":
    main()
