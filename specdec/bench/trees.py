"""Token trees against chains: what one target pass over n tree tokens costs, and how many tokens a
pass yields and how fast a run goes with trees of several budgets against chains at equal draft work.

    python -m specdec.bench.trees --setup qwen --out docs/trees/qwen.json
    python -m specdec.bench.trees --report docs/trees/*.json > docs/TREES.md

Equal draft work: a chain of k drafts costs a draft model k passes of one token; a draft tree of
depth k costs k passes of up to `branching` tokens. Lanes run one after the other, never overlapping;
each is timed by the engine's own synchronized clocks, warmed up first, and repeats report medians.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from ..engine.config import Sampling, Speculation, TreeShape
from ..engine.kvcache import CachedModel
from ..engine.pair import Pair, Request
from ..engine.timing import Clock
from ..engine.tree_verify import Tree
from .grid import load_suite
from .meters import OtherLoad
from .grid_presets import QWEN, QWEN_INT8, SMOLLM

SETUPS = {"qwen": QWEN, "qwen-int8": QWEN_INT8, "smollm2": SMOLLM}
SIZES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Config:
    drafter: str
    k: int
    tree: TreeShape | None = None

    @property
    def name(self) -> str:
        if self.tree is None:
            return f"{self.drafter} k={self.k}"
        return f"{self.drafter} depth={self.k} budget={self.tree.budget} branching={self.tree.branching}"


def configs(model_drafts: bool) -> list[Config]:
    """Chains at k = 2, 4, 6 and trees of depth 4 (and 6) with budgets 4..32, per drafter family."""
    chain, tree = ("draft-model", "draft-tree") if model_drafts else ("prompt-lookup", "lookup-tree")
    out = [Config(chain, k) for k in (2, 4, 6)]
    out += [Config(tree, 4, TreeShape(budget, 4)) for budget in (4, 8, 16, 32)]
    out += [Config(tree, 6, TreeShape(budget, 4)) for budget in (16, 32)]
    return out


def bushy(n: int, branching: int = 4) -> Tree:
    """A tree of n nodes filled breadth first, `branching` children each: the shape a draft tree of
    that budget takes when the draft is unsure."""
    parents = [-1 if i < branching else (i - branching) // branching for i in range(n)]
    return Tree(tuple(range(10, 10 + n)), tuple(parents))


def verify_costs(model: torch.nn.Module, ids: list[int], sizes=SIZES, repeats: int = 7) -> dict:
    """Median seconds of a one-token decode step, of a target pass over 1 + n tokens as a causal
    chain, and as a tree (bushy shape, tree mask), after the same cached prompt; ratios to the step."""
    lane, clock = CachedModel(model), Clock(next(model.parameters()).device)
    lane.logits(ids, 1)

    def timed(call) -> float:
        times = []
        for _ in range(repeats + 1):  # the first is a warm-up
            start = clock.now()
            call()
            times.append(clock.now() - start)
            lane.crop(len(ids) - 1)  # back to the prompt minus its last token, so each call re-feeds it
        return statistics.median(times[1:])

    step = timed(lambda: lane.logits(ids, 1))
    rows = []
    for n in sizes:
        chain = timed(lambda: lane.logits(ids + list(range(10, 10 + n)), n + 1))
        tree = timed(lambda: lane.verify_tree(ids, bushy(n)))
        rows.append({"nodes": n, "chain_steps": chain / step, "tree_steps": tree / step})
    return {"step_seconds": step, "prompt_tokens": len(ids), "rows": rows}


def run_config(pair: Pair, prompt: str, ids: list[int], config: Config, max_new: int, repeats: int) -> dict:
    spec = Speculation(k=config.k, tree=config.tree or TreeShape())
    request = Request(prompt, max_new, Sampling(), spec, config.drafter)
    list(pair.speculative(Request(prompt, 4, Sampling(), spec, config.drafter), ids))  # warm-up
    seconds, others = [], []
    for _ in range(repeats):
        load = OtherLoad()
        rounds = list(pair.speculative(request, ids))
        seconds.append(sum(r.seconds for r in rounds))
        others.append(load.cores())
        pair.free()
    tokens = [t for r in rounds for t in r.tokens]
    drafted = [r for r in rounds if r.drafted]
    return {
        "config": config.name, "drafter": config.drafter, "k": config.k,
        "budget": config.tree and config.tree.budget, "branching": config.tree and config.tree.branching,
        "tokens": tokens, "rounds": len(rounds), "tokens_per_pass": len(tokens) / len(rounds),
        "tokens_per_drafted_pass": (sum(len(r.tokens) for r in drafted) / len(drafted)) if drafted else None,
        "nodes_per_round": statistics.fmean(len(r.drafted) for r in drafted) if drafted else 0.0,
        "seconds": statistics.median(seconds), "seconds_all": seconds, "other_cores": others,
        "draft_seconds": sum(r.draft_seconds for r in rounds), "verify_seconds": sum(r.verify_seconds for r in rounds),
    }


def run_prompt(pair: Pair, prompt, max_new: int, repeats: int, model_drafts: bool, log) -> dict:
    ids = pair.prompt_ids(Request(prompt.text, max_new))
    list(pair.standard(Request(prompt.text, 4), ids))  # warm-up
    std_seconds = []
    for _ in range(repeats):
        events = list(pair.standard(Request(prompt.text, max_new), ids))
        std_seconds.append(sum(e.seconds for e in events))
        pair.free()
    standard = [e.token for e in events]
    rows = []
    for config in configs(model_drafts):
        row = run_config(pair, prompt.text, ids, config, max_new, repeats)
        tokens = row.pop("tokens")
        row["identical"] = tokens == standard
        row["speedup"] = (len(tokens) / row["seconds"]) / (len(standard) / statistics.median(std_seconds))
        log(f"{prompt.id} {config.name}: {row['tokens_per_pass']:.2f} tokens/pass, {row['speedup']:.2f}x, "
            f"identical {row['identical']}")
        rows.append(row)
    return {"prompt": prompt.id, "category": prompt.category, "prompt_tokens": len(ids),
            "standard_seconds": statistics.median(std_seconds), "standard_tokens": len(standard), "rows": rows}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specdec.bench.trees", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", choices=sorted(SETUPS), default="smollm2")
    parser.add_argument("--prompts", default="code-00,code-01,code-edit-05", help="prompt ids of the suite")
    parser.add_argument("--suite", default="../shared/prompts/bench.jsonl")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--lookup", action="store_true", help="prompt lookup chains and trees instead of the draft")
    parser.add_argument("--verify-only", action="store_true",
                        help="measure the verify costs only, and put them into --out if it exists")
    parser.add_argument("--engine", choices=["fast", "eager"], default=None,
                        help="CPU kernels for both models (default: fast on CPU); run once per engine to compare")
    parser.add_argument("--out", help="JSON file to write")
    parser.add_argument("--report", nargs="+", help="JSON files to turn into the markdown report (stdout)")
    return parser


def load_pair(args, log) -> Pair:
    from ..models.loading import load_model

    setup = SETUPS[args.setup]
    target = load_model(setup.target, log=log, engine=args.engine)
    if args.lookup or args.verify_only:
        return Pair(target)
    return Pair(target, load_model(setup.draft, target.device, target.dtype, log=log, quantize=setup.draft_quantize,
                                   engine=args.engine))


def measure(args, log) -> dict:
    setup, pair = SETUPS[args.setup], load_pair(args, log)
    prompts = [p for p in load_suite(Path(args.suite)) if p.id in args.prompts.split(",")]
    first = pair.prompt_ids(Request(prompts[0].text, args.max_new_tokens))
    costs = verify_costs(pair.target.model, first)
    log(json.dumps(costs["rows"]))
    if args.verify_only:
        earlier = json.loads(Path(args.out).read_text()) if args.out and Path(args.out).exists() else {}
        return {**earlier, "verify_costs": costs}
    drafts = pair.draft is not None
    return {"setup": setup.name, "target": setup.target, "draft": setup.draft if drafts else None,
            "draft_quantize": setup.draft_quantize if drafts else None, "dtype": str(pair.target.dtype),
            "engine": pair.target.engine, "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
            "torch_threads": torch.get_num_threads(),
            "verify_costs": costs,
            "prompts": [run_prompt(pair, p, args.max_new_tokens, args.repeats, drafts, log) for p in prompts]}


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.report:
        from .tree_report import report

        print(report([json.loads(Path(p).read_text()) for p in args.report]))
        return
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    text = json.dumps(measure(args, log), indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
