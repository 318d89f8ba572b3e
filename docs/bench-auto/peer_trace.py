"""One question, transformers' assisted generation with its real defaults against auto, pass by
pass: the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, fast engine), greedy, 128 tokens, three
interleaved repeats. transformers' side counts and times every target and draft forward (the tokens
each read: the first includes the prompt); auto's side starts each repeat from the same learned
costs (none: a fresh process) and an empty recycling table, and prints each round's source, drafted
and kept tokens. A diagnostic for a task where the two differ (translation, a 16-token answer).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/peer_trace.py specdec-017
"""
import functools
import sys
import time
from dataclasses import replace

from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench
from specdec.bench.spec_bench_run import _peer_turn
from specdec.engine.timing import Clock

pair = qwen_pair()
questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
request = replace(BASE, prompt=questions[sys.argv[1]].turns[0])
ids = pair.prompt_ids(request)
pair.warm_up(pair.auto(request))
learned, forwards = pair.learned(), []


def timed_forward(model, name):
    forward = model.forward

    @functools.wraps(forward)  # keeps the signature transformers inspects
    def timed(*args, **kwargs):
        start = time.perf_counter()
        out = forward(*args, **kwargs)
        ids_in = kwargs.get("input_ids", args[0] if args else None)
        forwards.append((name, -1 if ids_in is None else ids_in.shape[-1], time.perf_counter() - start))
        return out
    return timed


def restore(model, own) -> None:
    """Put back the model's own forward: an instance attribute it had, else the class's."""
    if own is None:
        del model.forward
    else:
        model.forward = own


for repeat in range(3):
    forwards.clear()
    models = {"target": pair.target.model, "draft": pair.draft.model}
    own = {name: model.__dict__.get("forward") for name, model in models.items()}
    for name, model in models.items():
        model.forward = timed_forward(model, name)
    record, _ = _peer_turn(pair, request, ids, Clock(pair.target.device))
    for name, model in models.items():
        restore(model, own[name])
    target = [(n, s) for name, n, s in forwards if name == "target"]
    draft = [(n, s) for name, n, s in forwards if name == "draft"]
    print(f"transformers: {record['new_tokens']} tokens in {record['seconds']:.2f} s; {len(target)} target passes "
          f"over {[n for n, _ in target]} tokens, {[round(1e3 * s) for _, s in target]} ms; {len(draft)} draft "
          f"passes, {1e3 * sum(s for _, s in draft):.0f} ms")
    pair.restore_learned(learned)
    with pair.recycling_from(pair.new_recycling_table()):
        start = time.perf_counter()
        rounds = list(pair.speculative(pair.auto(request)))
        seconds = time.perf_counter() - start
    print(f"auto: {sum(len(r.tokens) for r in rounds)} tokens in {seconds:.2f} s; {len(rounds)} rounds: "
          + " ".join(f"{r.source or 'plain'}:{len(r.drafted)}>{r.accepted}" for r in rounds))
