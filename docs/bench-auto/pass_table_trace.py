"""Auto alone over run.sh qwen-two-per-task's twelve questions, in that run's order (a question's turns
in order, each later turn with the answers before it), one run each, on the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B), greedy, 128 tokens, no saved costs: each round's cap (the k asked
of the drafter), tokens drafted and kept and its target pass in ms, and after each turn the cost
model's v(1..12) in ms with the passes behind each width (its weights). A diagnostic, not a
benchmark: it shows the pass-time table the stop rule read while it drafted.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/pass_table_trace.py > docs/bench-auto/pass_table_trace.txt
"""
import time
from dataclasses import replace

from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench

ORDER = "009 008 017 016 018 019 021 020 023 022 025 024".split()
questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
pair = qwen_pair()
pair.warm_up(pair.auto(replace(BASE, prompt=questions["specdec-009"].turns[0])))
table = dict(zip(pair.verify_costs.widths, (round(1e3 * s, 1) for s in pair.verify_costs.seconds)))
print("verify table:", table, flush=True)
for qid in ORDER:
    question, history = questions["specdec-" + qid], ()
    for turn, text in enumerate(question.turns):
        request = pair.auto(replace(BASE, prompt=text, history=history))
        start, tokens, rounds = time.perf_counter(), [], []
        for r in pair.speculative(request):
            tokens += r.tokens
            pass_ms = 1e3 * r.verify_seconds
            rounds.append(f"{r.source or 'plain'}:cap{r.k}/d{len(r.drafted)}/a{r.accepted}/{pass_ms:.0f}ms")
        seconds = time.perf_counter() - start
        costs = pair.cost_model(request)
        passes = [round(1e3 * v, 0) for v in costs.pass_seconds_many(range(1, 13))]
        weights = {n: round(d.weight, 1) for n, d in sorted(costs.verify.items())}
        print(f"== {qid} {question.category} t{turn} {len(tokens)} tok {seconds:.2f}s", flush=True)
        print("   " + " ".join(rounds))
        print("   v(1..12) ms:", passes, "weights", weights, flush=True)
        history = history + ((text, pair.tokenizer.decode(tokens, skip_special_tokens=True)),)
