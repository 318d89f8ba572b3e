"""What a draft chain gains from its own second choices, verified in the same target pass: a bound
on the questions of draft_bound.py (`run.sh qwen-fp32-tasks`, one per Spec-Bench task, every turn,
128 tokens, greedy), with the fp32 and the int8 0.5B draft.

On this machine the fast engine's target pass costs about the same over 1 to 6 tokens (v(n) below;
it jumps at 7), so a chain of k = 4 leaves a row or two of its pass unused. A sibling fills one: at a
drafted position the draft's second choice, a leaf of a tree whose trunk is the chain. It needs no
draft pass of its own (the row that chose the chain's token ranks the second too), and the target
reads it in the pass that verifies the chain. It pays only in a round the chain breaks exactly at
its position and the target's token there is the draft's second choice: the round then keeps one
token more (the sibling, then the target's token after it, read off the sibling's row), r + 2
tokens where the chain alone commits r + 1.

Replayed as draft_bound.py replays a chain (a teacher-forced pass of the draft over the target's
greedy answers says, at every position, whether a chain reaching it keeps its token, and what the
draft's second choice there is), priced with the measured v(n) and draft step c:

    k=K:        the chain alone: K c + v(K + 1);
    k=K+1 sib:  a sibling at the chain's least confident position (the draft's top-1 probability,
                known before the target reads anything): K c + v(K + 2);
    k=K+2 sib:  siblings at its two least confident positions: K c + v(K + 3);
    k=K+all:    a sibling at every position: K c + v(2K + 1).

A wider pass is priced at no less than a narrower one: v(n) is the running maximum of the measured
table, so a width that happened to time fast (one sweep's noise) cannot make its siblings look free.
The tokens a pass keeps (the table's "#Mean Accepted Tokens") need no timing at all.

Past the first token the target rejects, the chain's own confidences are read as if its prefix were
the true one (as draft_bound.py's confidence stop does): it moves only where a sibling is placed
after the break, where it cannot pay anyway. Overheads are left out, as in draft_bound.py. A greedy
bound: sampled, the siblings' acceptance needs the multi-candidate rule (tree_verify.py) and pays
less.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/sibling_bound.py > docs/bench-auto/sibling_bound.txt
"""
import torch

from draft_bound import QUESTIONS, runs, setup
from draft_quantization import answer_logits
from specdec.bench import spec_bench
from specdec.engine.kvcache import CachedModel
from specdec.engine.verify_costs import measure_draft_step, measure_verify_costs

CHAINS = (3, 4, 5)
SIBLINGS = ("", "+1 sib", "+2 sib", "+all")


def positions(draft: torch.nn.Module, prompt: list[int], answer: list[int]):
    """Per answer position: the draft's top-1 is the target's token; its second choice is; the top-1's
    probability (its confidence)."""
    top = answer_logits(draft, prompt, answer).softmax(-1).topk(2, dim=-1)
    first = [int(i) == token for i, token in zip(top.indices[:, 0], answer)]
    second = [int(i) == token for i, token in zip(top.indices[:, 1], answer)]
    return first, second, top.values[:, 0].tolist()


def sibling_slots(conf: list[float], t: int, k: int, siblings: str) -> set[int]:
    """The chain positions (0-based within the round) that carry a sibling."""
    if siblings == "+all":
        return set(range(k))
    n = {"": 0, "+1 sib": 1, "+2 sib": 2}[siblings]
    return set(sorted(range(k), key=lambda j: (conf[t + j], j))[:n])


def replay(run: list[int], second: list[bool], conf: list[float], c: float, v, k: int, siblings: str):
    """Seconds and tokens per pass of one answer drafted as a chain of k with the given siblings."""
    t, seconds, passes = 0, 0.0, []
    while t < len(run):
        drafted = min(k, len(run) - t - 1)  # the last token of an answer is never drafted for
        slots = sibling_slots(conf, t, drafted, siblings)
        kept = min(run[t], drafted)
        # The chain broke at its position `kept`; a sibling there that is the target's token keeps one more.
        bonus = int(kept < drafted and kept in slots and second[t + kept] and t + kept + 1 < len(run))
        seconds += drafted * c + v(drafted + 1 + len(slots))
        passes.append(kept + 1 + bonus)
        t += kept + 1 + bonus
    return seconds, passes


def main() -> None:
    target, drafts, questions, answered, context = setup()
    table = measure_verify_costs(CachedModel(target.model), context, tuple(range(1, 12)), repeats=5)
    print("# target pass v(n) in ms, fast engine, after a", len(context), "token prompt:")
    print("  " + "  ".join(f"{n}:{1000 * s:.0f}" for n, s in zip(table.widths, table.seconds)))
    monotone = [max(table.at(m) for m in range(1, n + 1)) for n in range(1, 12)]
    print("# priced at their running maximum:")
    print("  " + "  ".join(f"{n}:{1000 * s:.0f}" for n, s in enumerate(monotone, start=1)))
    v = lambda n: monotone[n - 1]  # noqa: E731
    lanes = [f"k={k}{s}" for k in CHAINS for s in SIBLINGS]
    for name, draft in drafts.items():
        c = measure_draft_step(draft, context, repeats=9)
        print(f"\n## {name} draft: step {1000 * c:.1f} ms = {c / table.at(1):.2f} target steps")
        answers, firsts, seconds_ = [], [], []
        for qid in QUESTIONS:
            per_turn = []
            for prompt, answer in answered[qid]:
                first, second, conf = positions(draft, prompt, answer)
                firsts += first
                seconds_ += [s for f, s in zip(first, second) if not f]
                per_turn.append((len(answer), runs(first), second, conf))
            answers += [{"question_id": qid, "category": questions[qid].category, "method": "standard",
                         "turns": [{"new_tokens": n, "seconds": n * v(1), "accept_lengths": None}
                                   for n, *_ in per_turn]}]
            for lane in lanes:
                k, siblings = int(lane[2]), lane[3:]
                answer_turns = []
                for n, run, second, conf in per_turn:
                    seconds, passes = replay(run, second, conf, c, v, k, siblings)
                    answer_turns.append({"new_tokens": n, "seconds": seconds, "accept_lengths": passes})
                answers.append({"question_id": qid, "category": questions[qid].category, "method": lane,
                                "turns": answer_turns})
        print(f"top-1 agreement over {len(firsts)} positions: {sum(firsts) / len(firsts):.3f}; where the top-1 "
              f"misses, the second choice is the target's token at {sum(seconds_) / max(1, len(seconds_)):.2f} "
              f"of {len(seconds_)} positions")
        print(spec_bench.table(spec_bench.leaderboard(answers), f"Replayed with the {name} draft (seconds from v and c above):"))


if __name__ == "__main__":
    main()
