"""How fast a draft model could make the Qwen pair at best, on the questions of `run.sh qwen-fp32-tasks`
(one per Spec-Bench task, every turn, 128 tokens, greedy): the fp32 0.5B draft against the loader's
int8 one. A bound, not a benchmark: it says how far #22's 1.8x overall is within a draft's reach.

A greedy chain drafted from position t keeps its tokens while the draft's top-1 given the true prefix
is the target's token: its j-th token is conditioned on its own earlier ones, which are the true
ones as long as they were kept. So one teacher-forced pass of the draft over prompt and answer says,
at every position, whether a chain reaching it would keep it (draft_quantization.py's ranks, top-1),
and the run of agreements from t is what a round starting at t keeps at most. With c the draft's
step and v(n) the target's pass over n tokens (measured here, the fast engine, after the prompt), each
answer is replayed as rounds:

    fixed k:  drafts k, keeps m = min(k, run), commits m + 1 tokens, costs k c + v(k + 1);
    oracle:   drafts exactly the run (up to K = 32) it will keep, so commits run + 1 tokens for
              run c + v(run + 1), and a plain step v(1) where the run is 0: every round pays one
              target pass and a draft pass for each token the draft supplies, and this one wastes
              neither (a rule that split a long run where v(n) jumps could do a little better);
    conf < tau: drafts until a drafted token's own probability (the draft's top-1 probability) is
              below tau (transformers' confidence stop; the token that fell below stays drafted), or
              32, and keeps the run within what it drafted. Exact up to the first token the target
              rejects; past it the draft's confidences are read as if the prefix were the true one
              (the chain's own are not known), which only moves the draft cost of a lost round;

and the standard lane is one v(1) a token. Per-round overheads (choosing, bookkeeping, the draft
reading back a correction) are left out: the bound is generous. Scored with Spec-Bench's arithmetic
(spec_bench.leaderboard) beside the measured run of the same questions.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_bound.py > docs/bench-auto/draft_bound.txt
"""
import json
from dataclasses import replace
from pathlib import Path

import torch

from ab_session import BASE
from draft_quantization import answer_logits
from specdec.bench import spec_bench
from specdec.engine.kvcache import CachedModel
from specdec.engine.pair import Pair
from specdec.engine.verify_costs import measure_draft_step, measure_verify_costs
from specdec.models.loading import load_model

QUESTIONS = ("specdec-009", "specdec-017", "specdec-018", "specdec-020", "specdec-023", "specdec-024")
K_MAX = 32
FIXED = (2, 3, 4, 5, 6, 8)
TAUS = (0.2, 0.4, 0.6, 0.8, 0.9)
MEASURED = Path("docs/spec-bench/qwen-fp32-tasks/spec_bench.json")


def agreements(draft: torch.nn.Module, prompt: list[int], answer: list[int]) -> tuple[list[bool], list[float]]:
    """Whether the draft's top-1 after prompt + answer[:t] is answer[t], and that top-1's probability,
    for every t."""
    top = answer_logits(draft, prompt, answer).softmax(-1).max(-1)
    return [int(i) == token for i, token in zip(top.indices, answer)], top.values.tolist()


def runs(agree: list[bool]) -> list[int]:
    """run[t]: how many agreements in a row from position t."""
    out = [0] * (len(agree) + 1)
    for t in range(len(agree) - 1, -1, -1):
        out[t] = out[t + 1] + 1 if agree[t] else 0
    return out[:-1]


def replay(run: list[int], conf: list[float], c: float, v, lane: str) -> tuple[float, list[int]]:
    """Seconds and tokens per pass of one answer drafted as `lane` says: "k=K", "oracle", "conf<tau"."""
    t, seconds, passes = 0, 0.0, []
    while t < len(run):
        left = len(run) - t - 1  # the last token of an answer is never drafted for
        if lane == "oracle":
            drafted = min(run[t], K_MAX, left)
        elif lane.startswith("k="):
            drafted = min(int(lane[2:]), left)
        else:
            tau, drafted = float(lane[5:]), 0
            while drafted < min(K_MAX, left):
                drafted += 1
                if conf[t + drafted - 1] < tau:
                    break
        kept = min(run[t], drafted)
        seconds += drafted * c + v(drafted + 1)
        passes.append(kept + 1)
        t += kept + 1
    return seconds, passes


def turns(pair: Pair, question) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, standard greedy answer) of each turn, a second turn asked after the first's answer."""
    out, history = [], ()
    for text in question.turns:
        request = replace(BASE, prompt=text, history=history)
        answer = [event.token for event in pair.standard(request)]
        out.append((pair.prompt_ids(request), answer))
        history = history + ((text, pair.tokenizer.decode(answer, skip_special_tokens=True)),)
    return out


def setup():
    """The target, its fp32 and int8 drafts, the sample's questions, the target's answers to QUESTIONS
    (turns) and a context to time passes after (the first prompt, up to 128 tokens)."""
    quiet = lambda message: None  # noqa: E731
    target = load_model("qwen-coder-1.5b", None, None, False, log=quiet)
    drafts = {"fp32": load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=quiet).model,
              "int8": load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=quiet,
                                 quantize="int8").model}
    pair = Pair(target)
    questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
    answered = {qid: turns(pair, questions[qid]) for qid in QUESTIONS}
    return target, drafts, questions, answered, answered[QUESTIONS[0]][0][0][:128]


def main() -> None:
    target, drafts, questions, answered, context = setup()
    widths = tuple(range(1, 12)) + (17, 33)
    table = measure_verify_costs(CachedModel(target.model), context, widths, repeats=5)
    print("# target pass v(n) in ms, fast engine, after a", len(context), "token prompt:")
    print("  " + "  ".join(f"{n}:{1000 * s:.0f}" for n, s in zip(table.widths, table.seconds)))
    for name, draft in drafts.items():
        c = measure_draft_step(draft, context, repeats=9)
        print(f"\n## {name} draft: step {1000 * c:.1f} ms = {c / table.at(1):.2f} target steps")
        lanes = ["standard"] + [f"k={k}" for k in FIXED] + [f"conf<{tau}" for tau in TAUS] + ["oracle"]
        answers, agreed = [], []
        for qid in QUESTIONS:
            category = questions[qid].category
            per_turn = []
            for prompt, answer in answered[qid]:
                agree, conf = agreements(draft, prompt, answer)
                agreed += agree
                per_turn.append((len(answer), runs(agree), conf))
            for lane in lanes:
                answer_turns = []
                for n, run, conf in per_turn:
                    if lane == "standard":
                        seconds, passes = n * table.at(1), None
                    else:
                        seconds, passes = replay(run, conf, c, table.at, lane)
                    answer_turns.append({"new_tokens": n, "seconds": seconds, "accept_lengths": passes})
                answers.append({"question_id": qid, "category": category, "method": lane, "turns": answer_turns})
        print(f"top-1 agreement over {len(agreed)} positions: {sum(agreed) / len(agreed):.3f}")
        print(spec_bench.table(spec_bench.leaderboard(answers), f"Replayed with {name} draft (seconds from v and c above):"))
    if MEASURED.exists():
        measured = json.loads(MEASURED.read_text())["answers"]
        print("\n## measured (docs/spec-bench/qwen-fp32-tasks, fp32 draft)")
        print(spec_bench.table(spec_bench.leaderboard(measured), "The run's own table:"))


if __name__ == "__main__":
    main()
