"""The CPU fast path measured (issue #18): what a target pass over n tokens costs with each engine,
how close standard decoding gets to the memory-bandwidth floor, ours against transformers'
generate(), and speculative decoding at k = 4 on the suite's code prompts.

    python -m specdec.bench.fastpath --out docs/fastpath/results.json
    python -m specdec.bench.fastpath --report docs/fastpath/results.json > docs/FASTPATH.md

Each (model, engine) runs in a child process of its own, so its load time and peak memory are its
own and the engines never share a cache or an allocator. Within a child the lanes run one after
the other (never overlapping), each warmed up, and medians are kept with their spread.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

MODELS = ("embedded", "qwen-coder-1.5b", "qwen-coder-0.5b")
PAIRS = (("qwen-coder-1.5b", "qwen-coder-0.5b", "int8"), ("qwen-coder-1.5b", "qwen-coder-0.5b", None))
ENGINES = ("eager", "fast")
CODE_PROMPT = "Write a Python function that merges two sorted lists into one sorted list, with a docstring and type hints."


def read_bandwidth(gigabytes: float = 2.0, repeats: int = 5) -> float:
    """GB/s this machine reads with torch's threads: the median time of a sum over a buffer far
    larger than any cache. A decode step reads every weight once, so weights / this is its floor."""
    buffer = torch.ones(int(gigabytes * 2**30) // 4)
    buffer.sum()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        buffer.sum()
        times.append(time.perf_counter() - start)
    return buffer.numel() * 4 / statistics.median(times) / 1e9


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def memory() -> dict:
    """Resident and peak resident memory of this process, in GB."""
    import resource

    with open("/proc/self/statm") as statm:
        resident = int(statm.read().split()[1]) * 4096
    return {"rss_gb": resident / 1e9, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes a decode step reads: every parameter once (a tied matrix once)."""
    seen = {p.data_ptr(): p.numel() * p.element_size() for p in model.parameters()}
    return sum(seen.values())


def decode_rates(loaded, tokens: int, repeats: int) -> dict:
    """Tokens per second of our standard decoding and of model.generate on the same model, prompt
    and budget, greedy, interleaved; and whether both produced the same tokens."""
    from ..engine.pair import Pair, Request
    from ..engine.timing import Clock

    pair, clock = Pair(loaded), Clock(loaded.device)
    request = Request(CODE_PROMPT, max_new_tokens=tokens, drafter="prompt-lookup")
    ids = pair.prompt_ids(request)
    pair.warm_up(request)
    inputs = torch.tensor([ids], device=loaded.device)
    ours, theirs, same = [], [], True
    for _ in range(repeats):
        start = clock.now()
        our_ids = [e.token for e in pair.standard(request, ids)]
        ours.append(len(our_ids) / (clock.now() - start))
        start = clock.now()
        out = loaded.model.generate(inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=tokens,
                                    do_sample=False, eos_token_id=loaded.eos_ids, pad_token_id=loaded.eos_ids[0])
        new = out[0, len(ids):].tolist()
        theirs.append(len(new) / (clock.now() - start))
        same &= new == our_ids
    return {"standard": spread(ours), "generate": spread(theirs), "identical": same,
            "verify_costs": pair.verify_costs.to_json()}


def measure_model(spec: str, engine: str, tokens: int, repeats: int) -> dict:
    from ..engine.kvcache import CachedModel
    from ..engine.verify_costs import measure_verify_costs
    from ..models.loading import load_model
    from .meters import OtherLoad

    load_start = time.perf_counter()
    loaded = load_model(spec, engine=engine, log=lambda message: print(message, file=sys.stderr))
    load_seconds = time.perf_counter() - load_start
    other = OtherLoad()
    context = loaded.tokenizer(CODE_PROMPT * 8)["input_ids"][:256]
    table = measure_verify_costs(CachedModel(loaded.model), context, repeats=repeats)
    rates = decode_rates(loaded, tokens, repeats)
    return {"model": spec, "engine": engine, "engine_used": loaded.engine, "load_seconds": load_seconds,
            "weight_gb": weight_bytes(loaded.model) / 1e9, "verify_costs_256": table.to_json(), **rates,
            **memory(), "other_load_cores": other.cores()}


def measure_pair(target_spec: str, draft_spec: str, quantize: str | None, engine: str, tokens: int,
                 repeats: int, suite: str | None) -> dict:
    """Speculative decoding at k = 4 (fixed) against our standard decoding on the suite's code
    prompts, interleaved per prompt and repeat; greedy, so the lanes must agree token for token."""
    from ..engine.pair import Pair, Request
    from ..engine.config import Speculation
    from ..models.loading import load_model
    from .command import find_suite
    from .grid import load_suite
    from .meters import OtherLoad

    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    target = load_model(target_spec, engine=engine, log=log)
    draft = load_model(draft_spec, engine=engine, quantize=quantize, log=log)
    pair, other = Pair(target, draft), OtherLoad()
    prompts = [p for p in load_suite(find_suite(suite)) if p.category == "code"]
    rows = []
    for prompt in prompts:
        request = Request(prompt.text, max_new_tokens=tokens, drafter="draft-model", spec=Speculation(k=4))
        pair.warm_up(request)
        ratios, identical = [], True
        for _ in range(repeats):
            standard = list(pair.standard(request))
            rounds = list(pair.speculative(request))
            std_rate = len(standard) / sum(e.seconds for e in standard)
            spec_ids = [t for r in rounds for t in r.tokens]
            ratios.append(len(spec_ids) / sum(r.seconds for r in rounds) / std_rate)
            identical &= spec_ids == [e.token for e in standard]
        rows.append({"prompt": prompt.id, "speedup": spread(ratios), "identical": identical,
                     "tokens_per_round": len(spec_ids) / len(rounds)})
    return {"target": target_spec, "draft": draft_spec, "draft_quantize": quantize, "engine": engine,
            "engine_used": {"target": target.engine, "draft": draft.engine}, "k": 4, "prompts": rows,
            "speedup": statistics.median(r["speedup"]["median"] for r in rows),
            "other_load_cores": other.cores(), **memory()}


def merge(base: dict, rerun: dict) -> dict:
    """base with rerun's rows in place of the rows they measure again; rerun's bandwidth kept beside."""
    model_key = lambda r: (r["model"], r["engine"])  # noqa: E731
    pair_key = lambda r: (r["target"], r["draft"], r["draft_quantize"], r["engine"])  # noqa: E731
    models = {model_key(r): r for r in base["models"]} | {model_key(r): r for r in rerun["models"]}
    pairs = {pair_key(r): r for r in base["pairs"]} | {pair_key(r): r for r in rerun["pairs"]}
    return {**base, "models": list(models.values()), "pairs": list(pairs.values()),
            "rerun_bandwidth_gb_s": rerun["bandwidth_gb_s"]}


def child(args: list[str]) -> dict:
    """Run one measurement in a fresh interpreter and return its JSON."""
    command = [sys.executable, "-m", "specdec.bench.fastpath", *args]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_all(args) -> dict:
    from .meters import machine

    torch.set_num_threads(args.threads)
    results = {"machine": machine(), "bandwidth_gb_s": read_bandwidth(), "tokens": args.tokens,
               "repeats": args.repeats, "models": [], "pairs": []}
    common = ["--tokens", str(args.tokens), "--repeats", str(args.repeats), "--threads", str(args.threads)]
    for spec in args.models:
        for engine in ENGINES:
            print(f"measuring {spec} ({engine})", file=sys.stderr)
            results["models"].append(child(["--one-model", spec, engine, *common]))
    for target, draft, quantize in PAIRS if args.pairs else ():
        for engine in ENGINES:
            print(f"measuring {target} + {draft} ({quantize or 'fp32'}, {engine})", file=sys.stderr)
            results["pairs"].append(child(["--one-pair", target, draft, quantize or "fp32", engine, *common]))
    return results


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specdec.bench.fastpath", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--no-pairs", dest="pairs", action="store_false", help="skip the speculative runs")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--suite", default=None)
    parser.add_argument("--out", default=None, help="JSON file for the results")
    parser.add_argument("--report", nargs="+", default=None, help="print the Markdown report of these results")
    parser.add_argument("--notes", default=None, help="Markdown appended to the report: its analysis")
    parser.add_argument("--merge", nargs=2, metavar=("BASE", "RERUN"), default=None,
                        help="write BASE with the rows RERUN measured again (same model and engine, or same pair "
                             "and engine) replaced, to --out: for re-measuring rows a busy machine spoiled")
    parser.add_argument("--one-model", nargs=2, metavar=("MODEL", "ENGINE"), help=argparse.SUPPRESS)
    parser.add_argument("--one-pair", nargs=4, metavar=("TARGET", "DRAFT", "QUANT", "ENGINE"), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.merge:
        merged = merge(*(json.loads(open(path).read()) for path in args.merge))
        Path(args.out).write_text(json.dumps(merged, indent=1))
    elif args.report:
        from .fastpath_report import report

        notes = Path(args.notes).read_text() if args.notes else ""
        print(report([json.loads(open(path).read()) for path in args.report]) + ("\n" + notes if notes else ""))
    elif args.one_model:
        print(json.dumps(measure_model(*args.one_model, args.tokens, args.repeats)))
    elif args.one_pair:
        target, draft, quantize, engine = args.one_pair
        print(json.dumps(measure_pair(target, draft, None if quantize == "fp32" else quantize, engine,
                                      args.tokens, args.repeats, args.suite)))
    else:
        results = run_all(args)
        text = json.dumps(results, indent=1)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(text)
        print(text)


if __name__ == "__main__":
    main()
