"""docs/TREES.md from the JSON that specdec.bench.trees writes: every number in it is in those files."""
from __future__ import annotations

import statistics


def _f(x, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def _zero(x) -> float:
    return x or 0.0


def verify_table(costs: dict) -> list[str]:
    lines = [f"Target pass over 1 + n tokens after a {costs['prompt_tokens']}-token prompt, in one-token decode "
             f"steps ({costs['step_seconds'] * 1000:.0f} ms), median of 7:", "",
             "| n | causal chain | tree (bushy, 4 children per node) |", "|---:|---:|---:|"]
    lines += [f"| {r['nodes']} | {_f(r['chain_steps'])} | {_f(r['tree_steps'])} |" for r in costs["rows"]]
    return lines


def prompt_table(prompt: dict) -> list[str]:
    lines = [f"**{prompt['prompt']}** ({prompt['category']}, {prompt['prompt_tokens']} prompt tokens; standard "
             f"decoding {prompt['standard_tokens'] / prompt['standard_seconds']:.2f} tok/s)", "",
             "| configuration | nodes verified / round | tokens / target pass | draft s | verify s | speedup | "
             "identical | other load |", "|---|---:|---:|---:|---:|---:|:---:|---:|"]
    for r in prompt["rows"]:
        lines.append(f"| {r['config']} | {_f(r['nodes_per_round'], '.1f')} | {_f(r['tokens_per_pass'])} | "
                     f"{_f(r['draft_seconds'], '.1f')} | {_f(r['verify_seconds'], '.1f')} | {_f(r['speedup'])}x | "
                     f"{'yes' if r['identical'] else 'NO'} | {_f(max(r['other_cores'], default=None, key=_zero))} |")
    return lines


def summary(result: dict) -> list[str]:
    """Tokens per pass of the best tree over the chain of the same depth (equal draft passes), and
    the best tree's wall clock against the best chain's, per prompt and as a mean."""
    lines = ["| prompt | chain k=4 tokens/pass | best depth-4 tree | ratio | chain k=6 | best depth-6 tree | "
             "ratio | best chain speedup | best tree speedup |", "|---|---:|---|---:|---:|---|---:|---:|---:|"]
    ratios = []
    for prompt in result["prompts"]:
        rows = prompt["rows"]
        chains = [r for r in rows if r["budget"] is None]
        trees = [r for r in rows if r["budget"] is not None]
        cells = []
        for depth in (4, 6):
            chain = next(r for r in chains if r["k"] == depth)
            best = max((r for r in trees if r["k"] == depth), key=lambda r: r["tokens_per_pass"])
            ratio = best["tokens_per_pass"] / chain["tokens_per_pass"]
            ratios.append(ratio)
            cells += [_f(chain["tokens_per_pass"]), f"{_f(best['tokens_per_pass'])} (budget {best['budget']})",
                      _f(ratio)]
        best_chain = max(chains, key=lambda r: r["speedup"])
        best_tree = max(trees, key=lambda r: r["speedup"])
        cells += [f"{_f(best['speedup'])}x ({best['config']})" for best in (best_chain, best_tree)]
        lines.append(f"| {prompt['prompt']} | {' | '.join(cells)} |")
    lines += ["", f"Mean ratio of tokens per pass, best tree / chain at equal draft passes: "
                  f"**{statistics.fmean(ratios):.2f}**."]
    return lines


def by_budget(result: dict) -> list[str]:
    """Each tree shape against the chain of its depth, as means over prompts: where trees stop paying."""
    pairs: dict[tuple[int, int], list[tuple[dict, dict]]] = {}
    for prompt in result["prompts"]:
        chains = {r["k"]: r for r in prompt["rows"] if r["budget"] is None}
        for r in prompt["rows"]:
            if r["budget"] is not None and r["k"] in chains:
                pairs.setdefault((r["k"], r["budget"]), []).append((r, chains[r["k"]]))
    lines = ["| depth | budget | tokens/pass, tree ÷ chain | verify s per round, tree ÷ chain | speedup, tree ÷ chain |",
             "|---:|---:|---:|---:|---:|"]
    for (depth, budget), runs in sorted(pairs.items()):
        ratio = lambda key: statistics.fmean(t[key] / c[key] for t, c in runs if c[key])  # noqa: E731
        per_round = statistics.fmean((t["verify_seconds"] / t["rounds"]) / (c["verify_seconds"] / c["rounds"])
                                     for t, c in runs)
        lines.append(f"| {depth} | {budget} | {ratio('tokens_per_pass'):.2f} | {per_round:.2f} | "
                     f"{ratio('speedup'):.2f} |")
    return lines


def engine_of(result: dict) -> str:
    """The CPU engine a run used; runs from before the fast engine existed ran eager."""
    return result.get("engine") or "eager"


def engines_table(results: list[dict]) -> list[str]:
    """The same setup and prompts measured on both engines, side by side: the verify cost a tree or
    chain pays, and the best chain's and tree's speedup over standard decoding on that engine."""
    # A setup may run twice on one engine with other prompts (qwen.json, qwen-explain.json): the
    # prompts are part of what pairs a fast run with its eager twin.
    runs = {(r["setup"], r["draft"] is None, tuple(p["prompt"] for p in r["prompts"]), engine_of(r)): r
            for r in results}
    lines = ["| setup | engine | step ms | chain n=4 / 8 / 16 | tree n=4 / 8 / 16 | prompt | best chain | best tree |",
             "|---|---|---:|---|---|---|---:|---:|"]
    for (setup, lookup, prompts, engine), result in sorted(runs.items()):
        if (setup, lookup, prompts, "fast" if engine == "eager" else "eager") not in runs:
            continue
        costs = {row["nodes"]: row for row in result["verify_costs"]["rows"]}
        cost = lambda key: " / ".join(_f(costs[n][key]) if n in costs else "n/a" for n in (4, 8, 16))  # noqa: E731
        for prompt in result["prompts"]:
            best = lambda rows: max((r["speedup"] for r in rows), default=None)  # noqa: E731
            chains = [r for r in prompt["rows"] if r["budget"] is None]
            trees = [r for r in prompt["rows"] if r["budget"] is not None]
            name = setup + (" (prompt lookup)" if lookup else "")
            lines.append(f"| {name} | {engine} | {result['verify_costs']['step_seconds'] * 1000:.0f} | "
                         f"{cost('chain_steps')} | {cost('tree_steps')} | {prompt['prompt']} | "
                         f"{_f(best(chains))}x | {_f(best(trees))}x |")
    return lines if len(lines) > 2 else []


def report(results: list[dict]) -> str:
    out = ["# Token trees against chains", "",
           "Generated by `docs/trees/run.sh`: its runs write the JSON in `docs/trees/`, its last line "
           "(`python -m specdec.bench.trees --report ...`) this file. Greedy, fp32, this repo's 2-core CPU; every row's output was compared with "
           "standard decoding token for token (column *identical*). A chain of k drafts and a draft tree "
           "of depth k cost the draft model the same number of passes (k); the tree's passes read up to "
           "`branching` tokens each. *other load* is the CPU (in cores) other processes used while a row ran: "
           "a row measured under load is slower than the machine can do. Each section names its CPU engine "
           "(`fast`: oneDNN-prepacked linear layers for multi-token passes; `eager`: PyTorch's default kernels).", ""]
    side_by_side = engines_table(results)
    if side_by_side:
        out += ["## The two engines side by side", "",
                "Verify costs in one-token steps of that engine; speedups over standard decoding on the same engine.",
                "", *side_by_side, ""]
    for result in results:
        draft = result["draft"] or "prompt lookup (no draft model)"
        out += [f"## {result['setup']}, {engine_of(result)} engine: target {result['target']}, draft {draft}"
                f"{' (' + result['draft_quantize'] + ')' if result.get('draft_quantize') else ''}; "
                f"{', '.join(p['prompt'] for p in result['prompts'])}", "",
                f"{result['max_new_tokens']} new tokens, {result['repeats']} repeat(s) (median), "
                f"{result['torch_threads']} torch threads.", "", "### Verify cost", ""]
        out += verify_table(result["verify_costs"]) + ["", "### Best tree against the chain", ""]
        out += summary(result) + ["", "### Each tree shape against the chain of its depth (mean over prompts)", ""]
        out += by_budget(result) + ["", "### Every run", ""]
        for prompt in result["prompts"]:
            out += prompt_table(prompt) + [""]
    return "\n".join(out)
