"""The benchmark's named grids: --quick, and the full CPU run committed as docs/BENCHMARKS.md."""
from __future__ import annotations

from ..engine.policy import POLICIES
from .grid import AUTO, Plan, Setup

SMOLLM = Setup("smollm2-135m", "embedded", draft="embedded", draft_quantize="int8")  # int8 copy drafts for itself
QWEN = Setup("qwen-coder-1.5b+0.5b", "qwen-coder-1.5b", draft="qwen-coder-0.5b")
# auto's setup on CPU: the int8 draft, which transformers' peers get too, so int8 is not the win.
QWEN_INT8 = Setup("qwen-coder-1.5b+0.5b-int8", "qwen-coder-1.5b", draft="qwen-coder-0.5b", draft_quantize="int8")


def auto_plans(suite, setups=(SMOLLM, QWEN_INT8), per_category: int = 1, max_new_tokens: int = 64,
               repeats: int = 2) -> list[Plan]:
    """auto (Pair.auto: the cost policy over every source the pair has, an int8 draft on CPU) on every
    category of each setup, against standard decoding, model.generate and transformers' assisted defaults."""
    return [Plan(setup, per_category=per_category, drafters=(AUTO,), policies=("cost",),
                 max_new_tokens=max_new_tokens, repeats=repeats) for setup in setups]


def quick_plans() -> list[Plan]:
    """One prompt per category, k=4, greedy, one repeat, every drafter: a smoke test of the whole
    pipeline with real numbers, in a few minutes on a laptop CPU."""
    return [Plan(SMOLLM, per_category=1, ks=(4,), max_new_tokens=64, repeats=1),
            Plan(SMOLLM, per_category=1, drafters=(AUTO,), policies=("cost",), max_new_tokens=64, repeats=1)]


def full_plans(suite) -> list[Plan]:
    """The committed CPU run, sized for about an hour on 2 cores. The Qwen pair decodes at ~2 tok/s on
    CPU, so it gets the first prompt of code, code editing, explanation and summarisation; SmolLM2
    gets the first prompt of every category."""
    first: dict[str, str] = {}
    for p in suite:
        first.setdefault(p.category, p.id)
    pick = lambda *cats: tuple(first[c] for c in cats if c in first) or None  # noqa: E731
    qwen = dict(max_new_tokens=64, repeats=2)
    # SmolLM2's grid: the draft model (its int8 copy) and prompt lookup, the pair of families every
    # run of this report has had, so the engines' rows sit side by side. Every drafter on every
    # category is over three hours here; the others have their own reports (docs/TREES.md,
    # docs/NEW-DRAFTERS.md, docs/SPEC-BENCH.md).
    smol = dict(max_new_tokens=96, repeats=2, drafters=("draft-model", "prompt-lookup"))
    return [
        Plan(QWEN, prompts=pick("code", "code-edit", "explain", "summarize"), drafters=("draft-model",),
             policies=tuple(POLICIES), **qwen),
        Plan(QWEN, prompts=pick("code"), drafters=("draft-model",), ks=(2, 6), **qwen),
        # Prompt lookup pays where the answer copies the prompt: editing and summarising.
        Plan(QWEN, prompts=pick("code-edit", "summarize"), drafters=("prompt-lookup",), **qwen),
        Plan(SMOLLM, per_category=1, ks=(2, 4, 6), **smol),
        Plan(SMOLLM, per_category=1, policies=("heuristic",), **smol),
        Plan(SMOLLM, prompts=pick("code", "explain", "creative"), temperatures=(0.8,), **smol),
        *auto_plans(suite),
    ]
