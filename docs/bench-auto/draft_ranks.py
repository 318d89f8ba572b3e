"""Where the target's greedy token sits in the draft's own ranking: the Qwen pair (Qwen2.5-Coder-1.5B,
fast engine, and its int8 0.5B draft), the twelve questions of `run.sh qwen-two-per-task`, first
turns, 128 tokens. Each answer is our standard decoding's (the target's greedy tokens); the draft
then reads prompt and answer in one pass, and each answer position gives the draft's top-1
probability (its confidence) and the rank of the target's token among the draft's (one pass over
the whole sequence: the int8 draft scales its activations per pass, so a position's probabilities
may differ a little from those of a one-token draft step; the ranks far from 0 do not). A diagnostic,
not a benchmark: it says what any draft of this model can keep on a task, the draft tree's extra
candidates included (top-2 to top-4 beside top-1), whatever the policy does.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_ranks.py > docs/bench-auto/draft_ranks.txt
"""
from dataclasses import replace

import torch

from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench

QUESTIONS = ("specdec-008,specdec-009,specdec-016,specdec-017,specdec-018,specdec-019,specdec-020,"
             "specdec-021,specdec-022,specdec-023,specdec-024,specdec-025").split(",")
TASKS = ("coding", "translation", "summarization", "qa", "math_reasoning", "rag")
BANDS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 0.95), (0.95, 1.0))


def positions(pair, question) -> list[tuple[float, int]]:
    """(the draft's top-1 probability, the target token's rank in the draft's order) per answer token."""
    request = replace(BASE, prompt=question.turns[0])
    prompt = pair.prompt_ids(request)
    answer = [event.token for event in pair.standard(request)]
    with torch.inference_mode():
        logits = pair.draft.model(input_ids=torch.tensor([prompt + answer])).logits[0].float()
    rows = torch.softmax(logits[len(prompt) - 1: len(prompt) - 1 + len(answer)], -1)
    return [(float(row.max()), int((row > row[token]).sum())) for row, token in zip(rows, answer)]


def line(label: str, rows: list[tuple[float, int]]) -> str:
    n = len(rows)
    top = [sum(rank < r for _, rank in rows) / n for r in (1, 2, 3, 4)]
    missed = [rank for _, rank in rows if rank > 0]
    caught = sum(rank <= 2 for rank in missed) / len(missed) if missed else float("nan")
    return (f"{label:24s} {n:5d}  top-1 {top[0]:.2f}  top-2 {top[1]:.2f}  top-3 {top[2]:.2f}  top-4 {top[3]:.2f}"
            f"  top-1 missed, 2nd or 3rd: {caught:.2f}")


def main() -> None:
    pair = qwen_pair()
    questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
    by_question = {qid: positions(pair, questions[qid]) for qid in QUESTIONS}
    every = [row for rows in by_question.values() for row in rows]
    print("# the target's greedy token in the draft's ranking (positions; share within the draft's top-r)")
    print(line("all", every))
    for task in TASKS:
        print(line(task, [row for qid in QUESTIONS if questions[qid].category == task for row in by_question[qid]]))
    for low, high in BANDS:
        print(line(f"top-1 p in [{low}, {high}]", [row for row in every if low <= row[0] < high or row[0] == high == 1.0]))
    for qid in ("specdec-016", "specdec-017", "specdec-024"):
        print(f"{qid} ({questions[qid].category}), (top-1 p, rank) by position:",
              " ".join(f"({p:.2f}, {rank})" for p, rank in by_question[qid]))


if __name__ == "__main__":
    main()
