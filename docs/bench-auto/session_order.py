"""Auto over a session: one pair answers the first turn of every question of the Spec-Bench-format
sample, in the bench's order, and each answer's tokens per second, target passes, tokens per pass and
the rounds each source drafted (with their mean accepted tokens) are printed. What one answer teaches
the cost policy is carried into the next (Pair.costs), as in the app, the CLI and the bench, so a
policy that cannot leave a bad state shows it here as answers decoded mostly plainly.

    .venv/bin/python docs/bench-auto/session_order.py              # the Qwen pair, int8 draft, 128 tokens
    .venv/bin/python docs/bench-auto/session_order.py --max-new-tokens 64 -v   # every round's reason too

Speculative lane only, one run per answer on a shared CPU: the tokens per second are single
measurements (compare them within one run or at a glance), the passes and sources are what the
policy chose. Numbers in docs/auto-notes.md.
"""
import argparse
import collections
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec import Pair, Request, load_model  # noqa: E402
from specdec.bench import spec_bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="qwen-coder-1.5b")
    parser.add_argument("--draft", default="qwen-coder-0.5b", help="'' for none")
    parser.add_argument("--draft-quantize", default="int8")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each round's reason too")
    args = parser.parse_args()
    questions = spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0)
    quiet = lambda message: None  # noqa: E731
    draft = load_model(args.draft, quantize=args.draft_quantize or None, log=quiet) if args.draft else None
    pair = Pair(load_model(args.target, log=quiet), draft)
    base = Request(questions[0].turns[0], args.max_new_tokens)
    pair.warm_up(pair.auto(base))
    for question in questions:
        start = time.perf_counter()
        rounds = list(pair.speculative(pair.auto(replace(base, prompt=question.turns[0]))))
        seconds = time.perf_counter() - start
        tokens = sum(len(r.tokens) for r in rounds)
        accepted = collections.defaultdict(list)
        for r in rounds:
            accepted[(r.source or "plain").split(":")[0]].append(r.accepted)
        sources = ", ".join(f"{s} {len(a)} ({sum(a) / len(a):.1f})" for s, a in accepted.items())
        print(f"{question.id} {question.category}: {tokens / seconds:.1f} tok/s, {len(rounds)} passes, "
              f"{tokens / len(rounds):.2f} tokens/pass; rounds (mean accepted): {sources}", flush=True)
        for r in rounds if args.verbose else ():
            print(f"    k={len(r.drafted)} accepted={r.accepted}: {r.reason}")


if __name__ == "__main__":
    main()
