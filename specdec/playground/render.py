"""HTML for the two lanes and the legend, and the rows of the stats table. No Gradio here."""
from __future__ import annotations

import html

from ..engine.drafters import DRAFTERS
from ..engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN
from ..engine.run_stats import RunStats, TreeYield
from ..engine.stats import undecided
from ..serving import METRICS, NOTE, Serving
from .result import RaceResult

# Fate -> (background, border, legend text). Light fills keep the text readable in both themes.
# PLAIN is grey: a round that drafted nothing is ordinary decoding, with nothing to credit or blame.
FATES = {
    ACCEPTED: ("#bbf7d0", "#16a34a", "accepted draft token"),
    CORRECTED: ("#fecaca", "#dc2626", "target correction (first rejected draft replaced)"),
    BONUS: ("#bfdbfe", "#2563eb", "bonus token (every draft accepted)"),
    PLAIN: ("#e5e7eb", "#6b7280", "plain target token (nothing was drafted this round)"),
}
BOX = ("font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 14px; line-height: 1.7; "
       "white-space: pre-wrap; word-break: break-word; color: #111827; background: #ffffff; "
       "border: 1px solid #d1d5db; border-radius: 8px; padding: 10px 12px; min-height: 180px; "
       "max-height: 420px; overflow-y: auto;")


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _span(text: str, fate: str) -> str:
    if not text:
        return ""  # a token that ends inside a multi-byte character shows up with the next one
    if not fate:
        return html.escape(text)
    fill, edge, meaning = FATES[fate]
    return (f'<span class="tok tok-{fate}" title="{meaning}" style="background:{fill}; '
            f'border-bottom:2px solid {edge}; border-radius:3px;">{html.escape(text)}</span>')


def lane_html(lane: str, title: str, pieces: list[tuple[str, str]], tokens: int, seconds: float,
              finished: bool, note: str = "", state: str | None = None) -> str:
    """A lane: a header with its live tokens/s, then its text (speculative tokens coloured). The
    state reads done, running or nothing, unless the caller names how the run ended ('stopped')."""
    rate = tokens / seconds if seconds > 0 else None
    state = state if state is not None else "done" if finished else ("running" if tokens else "")
    body = "".join(_span(text, fate) for text, fate in pieces) or html.escape(note)
    return (
        f'<div class="lane lane-{lane}" data-tokens="{tokens}" data-finished="{str(finished).lower()}">'
        f'<div style="display:flex; justify-content:space-between; align-items:baseline; margin:2px 2px 6px;">'
        f'<span style="font-weight:600; font-size:15px;">{html.escape(title)}</span>'
        f'<span class="lane-rate" style="font-variant-numeric: tabular-nums;">'
        f'<b style="font-size:18px;">{_rate(rate)}</b> tok/s · {tokens} tokens · {seconds:.2f} s {state}</span></div>'
        f'<div class="lane-text" style="{BOX}">{body}</div></div>'
    )


def legend_html() -> str:
    chips = "".join(
        f'<span style="margin-right:14px; white-space:nowrap;">{_span("token", fate)} {meaning}</span>'
        for fate, (_, _, meaning) in FATES.items()
    )
    return f'<div class="legend" style="font-size:13px; margin:4px 2px;"><b>Speculative tokens:</b> {chips}</div>'


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def stats_rows(result: RaceResult) -> list[list[str]]:
    """[quantity, value, meaning] rows of the comparison table."""
    run, standard, speculative = result.run, result.standard, result.speculative
    rows = [
        ["tokens/s, standard", _fmt(standard.tokens_per_s, 2), f"{standard.tokens} tokens in {standard.seconds:.2f} s"],
        ["tokens/s, speculative", _fmt(speculative.tokens_per_s, 2),
         f"{speculative.tokens} tokens in {speculative.seconds:.2f} s, {run.rounds} rounds"],
        ["speedup, measured", _fmt(run.speedup, 2), "speculative tokens/s ÷ standard tokens/s"],
        ["speedup, predicted", _fmt(run.predicted_speedup, 2),
         "Σ τ(α̂, m_r) / Σ (m_r·c + 1) over the rounds' own draft lengths m_r (Leviathan et al. eq. 1)"],
        ["speedup, predicted with verify cost", _fmt(run.predicted_speedup_with_verify_cost, 2),
         "Σ τ(α̂, m_r) / Σ (m_r·c + v), v = measured verify cost (1 for a round that drafted nothing)"],
        ["α (acceptance rate)", _fmt(run.alpha), "truncated-geometric MLE over rounds"],
        ["τ (mean tokens per round)", f"{_fmt(run.tokens_per_round, 2)} measured / {_fmt(run.tau, 2)} expected",
         "expected: mean over rounds of τ(α̂, m_r) = (1 − α̂^(m_r+1)) / (1 − α̂), "
         "m_r = the round's own draft length"],
        ["k (tokens drafted per round)", _fmt(run.k), "starting k when adaptive"],
        ["rounds with no draft", f"{run.rounds_without_draft} of {run.rounds}",
         "the policy chose plain decoding or the drafter proposed nothing: one plain target token, as standard "
         "decoding would (a last round with one token left, which no policy can draft for, is not counted)"],
        ["c (draft cost ratio)", _fmt(run.c), "seconds per drafted token ÷ seconds per target step"],
        ["verify cost", _fmt(run.verify_cost, 2), "a (k+1)-token verify pass, in target steps"],
    ]
    if result.engine:
        rows.append(["engine", result.engine, ENGINE_NOTES.get(result.engine, "")])
    if result.finished:
        rows.insert(0, ["did speculation pay?", run.verdict.answer, str(run.verdict)])
    else:  # a streaming run's figures move: no verdict until it ends
        rows.insert(0, ["did speculation pay?", "running (figures provisional)",
                        "the verdict and its interval come when the run ends"])
    rows.insert(1, ["policy", result.policy, _policy_note(run)])
    if result.drafter:
        rows.insert(2, ["drafter", drafter_label(result.drafter, result.draft_layers), DRAFTERS.get(result.drafter, "")])
    if run.tree:
        rows.append(_tree_row(run.tree))
    return rows + _serving_rows(result.serving if result.finished else None) + _identity_rows(result)


def _serving_rows(serving: Serving | None) -> list[list[str]]:
    if serving is None:
        return []
    if serving.vllm_config is None:
        return [["serving", "no speculation", serving.advice or ""]]
    return [["vLLM", serving.vllm_flag, NOTE],
            ["SGLang", serving.sglang_flag, "compare: " + ", ".join((METRICS["vllm"][0], *METRICS["sglang"]))]]


def _identity_rows(result: RaceResult) -> list[list[str]]:
    if not (result.greedy and result.finished and result.run.identical is not None):
        return []
    return [["outputs identical", _identical(result.run),
             "greedy: speculative must equal standard, unless the target's top two logits tie "
             "within its dtype's rounding"]]


ENGINE_NOTES = {
    "fast": "CPU kernels: large linear layers also prepacked for oneDNN, so a verify pass over a few tokens "
            "costs about one step (single steps keep the default kernel), and the projections that read one "
            "input (q, k, v; gate, up) multiplied as one; both lanes run on it",
    "eager": "PyTorch's default kernels (on a GPU, or where the fast engine does not apply); both lanes run on it",
}


def result_card(result: RaceResult | None) -> str:
    """The run's one-line verdict with its 90% interval, or a note that there is none yet. An
    interval that holds 1.0 means this run cannot tell whether speculation paid; a busy machine is named."""
    if result is None or not result.finished or result.run.speedup is None:
        return '<div class="result-card idle">The verdict appears here when a run ends.</div>'
    run, interval = result.run, result.interval
    head = f"{run.speedup:.2f}x {'faster' if run.speedup >= 1 else 'slower'}"
    if run.speedup_runs:
        head += f", the median of {len(run.speedup_runs)} runs ({', '.join(f'{r:.2f}x' for r in run.speedup_runs)})"
    if interval:
        head += f" (90% interval {interval[0]:.2f}–{interval[1]:.2f})"
    parts = [f"α {_fmt(run.alpha, 2)}", f"{_fmt(run.tokens_per_round, 1)} tokens per target pass"]
    if run.k_settled is not None:
        parts.append(f"k settled on {run.k_settled:g}")
    notes = []
    if undecided(interval):
        notes.append("the interval holds 1.0: this run cannot tell whether speculation paid; repeat it")
    if result.busy:
        notes.append("the machine was busy (standard steps slower than at warm-up): the numbers are noisier")
    note = "".join(f'<div class="result-note">{html.escape(n)}</div>' for n in notes)
    return (f'<div class="result-card"><b style="font-size:18px;">{html.escape(head)}</b> · '
            f'{html.escape(" · ".join(parts))}{note}</div>')


def layer_ranges(layers) -> str:
    """(0, 1, 2, 3, 9, 11, 12) -> '0-3,9,11-12': layer indices as the Self-draft layers field takes them."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive layers
    for i in layers:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def drafter_label(drafter: str, layers=None) -> str:
    """The drafter's name, with the layers it drafts from for the self drafter: 'self · layers 0-14'."""
    return f"{drafter} · layers {layer_ranges(layers)}" if layers else drafter


def _tree_row(tree: TreeYield) -> list[str]:
    """A tree run's mean tree and what one target pass over it yielded."""
    return ["token tree (mean per round)", f"{tree.nodes_per_round:.1f} nodes, depth {tree.depth_per_round:.1f}",
            f"over {tree.rounds} tree rounds: {tree.accepted_per_round:.2f} accepted along the path, "
            f"{tree.tokens_per_pass:.2f} tokens per target pass (α̂ and τ count a tree's depth as its k)"]


def _policy_note(run: RunStats) -> str:
    """The k it settled on, and where the drafts came from."""
    sources = ", ".join(f"{n} rounds from {s}" for s, n in run.sources.items())
    return f"settled on k = {_fmt(run.k_settled)} (median of the second half)" + (f"; {sources}" if sources else "")


def _identical(run: RunStats) -> str:
    """yes; or where the lanes diverged and whether a numerical tie explains it."""
    if run.identical:
        return "yes"
    return f"no: {run.divergence.describe()}" if run.divergence else "no"


STATS_HEADERS = ["quantity", "value", "meaning"]
