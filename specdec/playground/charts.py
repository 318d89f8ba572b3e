"""The four plotly charts that set the measured rounds against the α-geometric theory.

Theory (specdec/stats.py): with acceptance rate α and m drafted tokens, the number accepted N is
geometric truncated at m, a round adds N + 1 tokens, E[N + 1] = τ(α, m), and the expected speedup
with draft cost c is τ(α, k) / (k·c + 1). α̂ is the maximum-likelihood estimate from the rounds.
"""
from __future__ import annotations

import plotly.graph_objects as go

from ..engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent
from .render import FATES
from ..engine.stats import accepted_pmf, predicted_speedup, tau

LAYOUT = dict(template="plotly_white", height=300, margin=dict(l=50, r=15, t=45, b=45),
              legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, font=dict(size=11)),
              font=dict(size=12), title=dict(font=dict(size=14), y=0.98))
THEORY = "#7c3aed"


def _figure(title: str, x_title: str, y_title: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(**LAYOUT)
    fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", yanchor="top"))
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    return fig


def _waiting(fig: go.Figure) -> go.Figure:
    fig.add_annotation(text="waiting for rounds…", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(color="#6b7280"))
    return fig


def tokens_per_round(rounds: list[RoundEvent], alpha: float | None) -> go.Figure:
    """Accepted drafts plus the target's token, per round, against E[tokens] = τ(α̂, m_round).
    A round that drafted nothing shows its one token as plain, not as a bonus speculation earned."""
    fig = _figure("Tokens per round vs expected τ(α̂, k)", "round", "tokens")
    if not rounds:
        return _waiting(fig)
    x = [r.round for r in rounds]
    kept = [sum(f == ACCEPTED for f in r.fates) for r in rounds]
    fig.add_bar(x=x, y=kept, name="accepted drafts", marker_color=FATES[ACCEPTED][1])
    for fate in (CORRECTED, BONUS, PLAIN):
        counts = [sum(f == fate for f in r.fates) for r in rounds]
        if fate != PLAIN or any(counts):  # a draft model rarely drafts nothing: no empty legend entry
            fig.add_bar(x=x, y=counts, name=fate, marker_color=FATES[fate][1])
    if alpha is not None:
        # Each round's own draft length (adaptive k, or prompt lookup proposing fewer) sets its τ.
        fig.add_scatter(x=x, y=[tau(alpha, len(r.drafted)) for r in rounds], mode="lines", name="τ(α̂, k)",
                        line=dict(color=THEORY, dash="dash", shape="hvh"))
    if any(r.k != rounds[0].k for r in rounds):  # a policy moved k: show what each round asked for
        fig.add_scatter(x=x, y=[r.k for r in rounds], mode="markers", name="k chosen",
                        marker=dict(color="#111827", symbol="line-ew-open", size=14, line=dict(width=2)))
    fig.update_layout(barmode="stack", bargap=0.15)
    return fig


def accepted_histogram(rounds: list[RoundEvent], alpha: float | None) -> go.Figure:
    """How many drafts each round kept, against the truncated-geometric pmf at α̂.

    Rounds draft different lengths m, so the expected count of n is the sum over rounds of
    P(N = n | α̂, m_round), a mixture of pmfs. Rounds that drafted nothing test nothing and are left out.
    """
    fig = _figure("Accepted per round vs truncated geometric", "drafts accepted in the round", "rounds")
    tested = [r for r in rounds if r.drafted]
    if not tested:
        return _waiting(fig)
    top = max(len(r.drafted) for r in tested)
    observed = [sum(r.accepted == n for r in tested) for n in range(top + 1)]
    fig.add_bar(x=list(range(top + 1)), y=observed, name="measured", marker_color="#94a3b8")
    if alpha is not None:
        expected = [0.0] * (top + 1)
        for r in tested:
            for n, p in enumerate(accepted_pmf(alpha, len(r.drafted))):
                expected[n] += p
        fig.add_scatter(x=list(range(top + 1)), y=expected, mode="lines+markers", name=f"pmf at α̂ = {alpha:.2f}",
                        line=dict(color=THEORY))
    fig.update_xaxes(dtick=1)
    return fig


def speedup_vs_k(alpha: float | None, c: float | None, verify_cost: float | None, k: float,
                 measured: float | None, k_max: int, settled: float | None = None) -> go.Figure:
    """Expected speedup τ(α̂, k)/(k·c + v) over k, with the measured run as a point and the k the
    policy settled on as a vertical line."""
    fig = _figure("Expected speedup vs k (measured α̂, c)", "k (tokens drafted per round)", "speedup ×")
    if alpha is None:
        return _waiting(fig)
    ks = list(range(1, k_max + 1))
    cost = c or 0.0
    fig.add_scatter(x=ks, y=[predicted_speedup(alpha, g, cost) for g in ks], mode="lines+markers",
                    name="theory (verify = 1 step)", line=dict(color=THEORY))
    if verify_cost:
        fig.add_scatter(x=ks, y=[predicted_speedup(alpha, g, cost, verify_cost) for g in ks], mode="lines",
                        name=f"with verify cost {verify_cost:.2f}", line=dict(color=THEORY, dash="dot"))
    if measured is not None:
        fig.add_scatter(x=[k], y=[measured], mode="markers", name="measured",
                        marker=dict(color="#ea580c", size=13, symbol="diamond"))
    fig.add_hline(y=1.0, line=dict(color="#9ca3af", width=1))
    if settled is not None:
        fig.add_vline(x=settled, line=dict(color="#ea580c", dash="dot", width=1),
                      annotation_text=f"policy settled on k = {settled:g}", annotation_position="top")
    return fig


def position_acceptance(rates: list[float | None], alpha: float | None) -> go.Figure:
    """P(position i accepted | positions before it were); the geometric model says flat at α."""
    fig = _figure("Acceptance by draft position", "draft position", "acceptance rate")
    if not rates:
        return _waiting(fig)
    x = list(range(1, len(rates) + 1))
    fig.add_bar(x=x, y=[r if r is not None else 0.0 for r in rates], name="measured", marker_color=FATES[ACCEPTED][1])
    if alpha is not None:
        fig.add_scatter(x=x, y=[alpha] * len(x), mode="lines", name="α̂ (geometric model)",
                        line=dict(color=THEORY, dash="dash"))
    fig.update_yaxes(range=[0, 1.05])
    fig.update_xaxes(dtick=1)
    return fig


def all_charts(rounds: list[RoundEvent], stats: dict, k_max: int) -> tuple[go.Figure, ...]:
    alpha = stats.get("alpha")
    drafted = [len(r.drafted) for r in rounds if r.drafted]
    k_point = sum(drafted) / len(drafted) if drafted else stats.get("k", 1)  # the mean k actually drafted
    return (
        tokens_per_round(rounds, alpha),
        accepted_histogram(rounds, alpha),
        speedup_vs_k(alpha, stats.get("c"), stats.get("verify_cost"), k_point, stats.get("speedup"), k_max,
                     stats.get("k_settled")),
        position_acceptance(stats.get("position_acceptance") or [], alpha),
    )
