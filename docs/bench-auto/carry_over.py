"""What the cost policy carries from one request to the next: one pair answers prompts in a given
order in one process, and each answer's tokens per second, target passes, tokens per pass, the rounds
each source drafted (with their mean accepted tokens) and the k drafted and tokens accepted each round
are printed, so a request that follows others can be read off against the same request first.

    .venv/bin/python docs/bench-auto/carry_over.py explain-08,summarize-12,code-00
    .venv/bin/python docs/bench-auto/carry_over.py summarize-12,code-00,code-edit-05,explain-08,summarize-12
    # a session: the Spec-Bench sample's first turns in bench order, auto, the int8 draft, 128 tokens
    .venv/bin/python docs/bench-auto/carry_over.py all --auto --draft-quantize int8 --max-new-tokens 128

Prompts are ids of the bench suite (bench/prompts/bench.jsonl) or of the Spec-Bench-format sample
(its first turns; `all`: every question of one-per-category sample, as the bench draws it). The
pair is the Qwen one (needs `python -m specdec fetch qwen-pair`; its fp32 draft unless
--draft-quantize), greedy; the cost policy with the
draft model, or with --auto, Pair.auto's setup (every source, as the app, the CLI and the bench run
it). One run per request, speculative lane only: the seconds are a single measurement on a shared
CPU; the rounds are what the policy chose. Numbers in docs/auto-notes.md.
"""
import argparse
import collections
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from specdec import Pair, Request, Speculation, load_model  # noqa: E402
from specdec.bench import spec_bench  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "specdec" / "bench" / "prompts" / "bench.jsonl"


def prompts() -> dict[str, str]:
    """Every prompt by id: the bench suite's, then the Spec-Bench sample's first turns, in bench order."""
    found = {p["id"]: p["prompt"] for p in map(json.loads, SUITE.read_text().splitlines())}
    sample = spec_bench.sample(spec_bench.read_questions(spec_bench.SAMPLE), 1, 0)
    return found | {q.id: q.turns[0] for q in sample}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("order", help="comma list of prompt ids, answered in this order by one pair; or 'all'")
    parser.add_argument("--auto", action="store_true", help="Pair.auto's setup (default: the cost policy, draft model)")
    parser.add_argument("--draft-quantize", default="", help="int8 for auto's CPU draft (default: fp32)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each round's reason too")
    args = parser.parse_args()
    texts = prompts()
    order = [pid for pid in texts if pid.startswith("specdec-")] if args.order == "all" else args.order.split(",")
    quiet = lambda message: None  # noqa: E731
    pair = Pair(load_model("qwen-coder-1.5b", log=quiet),
                load_model("qwen-coder-0.5b", quantize=args.draft_quantize or None, log=quiet))
    base = Request(texts[order[0]], args.max_new_tokens, spec=Speculation(policy="cost", k_max=16))
    setup = pair.auto if args.auto else (lambda request: request)
    pair.warm_up(setup(base))
    for pid in order:
        start = time.perf_counter()
        rounds = list(pair.speculative(setup(replace(base, prompt=texts[pid]))))
        seconds = time.perf_counter() - start
        tokens = sum(len(r.tokens) for r in rounds)
        accepted = collections.defaultdict(list)
        for r in rounds:
            accepted[(r.source or "plain").split(":")[0]].append(r.accepted)
        sources = ", ".join(f"{s} {len(a)} ({sum(a) / len(a):.1f})" for s, a in accepted.items())
        print(f"{pid}: {tokens / seconds:.1f} tok/s, {len(rounds)} target passes, {tokens / len(rounds):.2f} "
              f"tokens/pass; rounds (mean accepted): {sources}\n    k {[len(r.drafted) for r in rounds]}, "
              f"accepted {[r.accepted for r in rounds]}", flush=True)
        for r in rounds if args.verbose else ():
            print(f"    k={len(r.drafted)} accepted={r.accepted}: {r.reason}")


if __name__ == "__main__":
    main()
