"""What the cost policy carries from one request to the next: the same pair answers bench prompts in a
given order in one process, and each answer's rounds are printed (k drafted, tokens accepted), so a
request that follows another text can be read off against the same request first.

    .venv/bin/python docs/bench-auto/carry_over.py explain-08,summarize-12,code-00
    .venv/bin/python docs/bench-auto/carry_over.py summarize-12,code-00,code-edit-05,explain-08,summarize-12

The Qwen pair with its fp32 draft (needs `python -m specdec fetch qwen-pair`), greedy, 64 new tokens,
the cost policy with the draft model. One run per request: the seconds are a single measurement on a
shared CPU; the rounds are what the policy chose. Numbers in docs/auto-notes.md.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec import Pair, Request, Speculation, load_model  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "specdec" / "bench" / "prompts" / "bench.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("order", help="comma list of prompt ids, answered in this order by one pair")
    parser.add_argument("--suite", default=str(SUITE))
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each round's reason too")
    args = parser.parse_args()
    prompts = {p["id"]: p["prompt"] for p in map(json.loads, Path(args.suite).read_text().splitlines())}
    pair = Pair(load_model("qwen-coder-1.5b"), load_model("qwen-coder-0.5b"))
    request = lambda pid: Request(prompts[pid], args.max_new_tokens, spec=Speculation(policy="cost", k_max=16))  # noqa: E731
    pair.warm_up(request(args.order.split(",")[0]))
    for pid in args.order.split(","):
        start = time.perf_counter()
        rounds = list(pair.speculative(request(pid)))
        seconds = time.perf_counter() - start
        tokens = sum(len(r.tokens) for r in rounds)
        print(f"{pid}: {seconds:.1f} s, {len(rounds)} target passes, {tokens / len(rounds):.2f} tokens/pass; "
              f"k {[len(r.drafted) for r in rounds]}, accepted {[r.accepted for r in rounds]}", flush=True)
        for r in rounds if args.verbose else ():
            print(f"    k={len(r.drafted)} accepted={r.accepted}: {r.reason}")


if __name__ == "__main__":
    main()
