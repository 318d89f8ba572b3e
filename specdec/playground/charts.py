"""The four plotly charts that set the measured rounds against the α-geometric theory, and a
tree round drawn node by node.

Theory (specdec/engine/stats.py): with acceptance rate α and m drafted tokens, the number accepted N is
geometric truncated at m, a round adds N + 1 tokens, E[N + 1] = τ(α, m), and the expected speedup
with draft cost c is τ(α, k) / (k·c + 1). α̂ is the maximum-likelihood estimate from the rounds. A
tree round counts with its depth as m (RoundEvent.draft_length): the longest run it could add.
"""
from __future__ import annotations

import html
import statistics

import plotly.graph_objects as go

from ..engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent
from ..engine.run_stats import RunStats, TreeYield
from .result import RaceResult
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
        fig.add_scatter(x=x, y=[tau(alpha, r.draft_length) for r in rounds], mode="lines", name="τ(α̂, k)",
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
    top = max(r.draft_length for r in tested)
    observed = [sum(r.accepted == n for r in tested) for n in range(top + 1)]
    fig.add_bar(x=list(range(top + 1)), y=observed, name="measured", marker_color="#94a3b8")
    if alpha is not None:
        expected = [0.0] * (top + 1)
        for r in tested:
            for n, p in enumerate(accepted_pmf(alpha, r.draft_length)):
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
    if alpha is None or c is None:  # no draft cost measured yet: a curve at c = 0 would promise a free draft
        return _waiting(fig)
    ks = list(range(1, k_max + 1))
    fig.add_scatter(x=ks, y=[predicted_speedup(alpha, g, c) for g in ks], mode="lines+markers",
                    name="theory (verify = 1 step)", line=dict(color=THEORY))
    if verify_cost:
        fig.add_scatter(x=ks, y=[predicted_speedup(alpha, g, c, verify_cost) for g in ks], mode="lines",
                        name=f"with verify cost {verify_cost:.2f}", line=dict(color=THEORY, dash="dot"))
    if measured is not None:
        fig.add_scatter(x=[k], y=[measured], mode="markers", name="measured",
                        marker=dict(color="#ea580c", size=13, symbol="diamond"))
    fig.add_hline(y=1.0, line=dict(color="#9ca3af", width=1))
    if settled is not None:
        # The label sits low, inside the plot: at the top it ran into the legend above the plot.
        fig.add_vline(x=settled, line=dict(color="#ea580c", dash="dot", width=1),
                      annotation_text=f"policy settled on k = {settled:g}", annotation_position="bottom right")
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


def all_charts(rounds: list[RoundEvent], stats: RunStats, k_max: int) -> tuple[go.Figure, ...]:
    """The four charts; a tree run gets tokens per pass against node count where a chain run gets
    speedup against k (a tree's k is only its depth; its width is what the run chose)."""
    alpha = stats.alpha
    drafted = [r.draft_length for r in rounds if r.drafted]
    k_point = sum(drafted) / len(drafted) if drafted else stats.k  # the mean k actually drafted
    if stats.tree:
        third = tree_tokens_per_pass(rounds, alpha, stats.tree)
    else:
        third = speedup_vs_k(alpha, stats.c, stats.verify_cost, k_point, stats.speedup, k_max, stats.k_settled)
    return (
        tokens_per_round(rounds, alpha),
        accepted_histogram(rounds, alpha),
        third,
        position_acceptance(list(stats.position_acceptance), alpha),
    )


def tree_tokens_per_pass(rounds: list[RoundEvent], alpha: float | None, measured: TreeYield | None) -> go.Figure:
    """Expected tokens per target pass against the nodes n it verifies, n = 1 .. the largest tree.

    The draft's estimate: a node is accepted with about the probability the draft gives its path
    (its reach), so a round's n likeliest nodes yield 1 + the sum of their reach (the 1 is the
    target's own token); those n form a tree, since no child is likelier than its parent. The chain
    theory τ(α̂, n) is what n nodes in a single chain would yield. measured: the run's TreeYield."""
    fig = _figure("Expected tokens per pass vs nodes verified", "nodes verified per pass (n)",
                  "tokens per target pass")
    trees = [r.tree for r in rounds if r.tree is not None]
    if not trees:
        return _waiting(fig)
    ns = list(range(1, max(len(t.tokens) for t in trees) + 1))
    estimate = draft_estimate([t.reach for t in trees if t.reach is not None], ns[-1])
    if estimate:
        fig.add_scatter(x=ns, y=estimate, mode="lines+markers", name="draft's own estimate: 1 + Σ top-n reach",
                        line=dict(color="#0891b2"))
    if alpha is not None:
        fig.add_scatter(x=ns, y=[tau(alpha, n) for n in ns], mode="lines", name=f"chain theory τ(α̂ = {alpha:.2f}, n)",
                        line=dict(color=THEORY, dash="dash"))
    if measured:
        fig.add_scatter(x=[measured.nodes_per_round], y=[measured.tokens_per_pass], mode="markers",
                        name="measured (mean nodes, tokens per pass)",
                        marker=dict(color="#ea580c", size=13, symbol="diamond"))
    fig.add_hline(y=1.0, line=dict(color="#9ca3af", width=1))  # plain decoding: one token per pass
    return fig


def draft_estimate(reaches: list, n_max: int) -> list[float]:
    """Mean over rounds of 1 + the sum of a round's n largest reach values, for n = 1 .. n_max (a
    round with fewer nodes counts all of them). Empty without reach (prompt lookup)."""
    if not reaches:
        return []
    per_round = []
    for reach in reaches:
        sums, total = [], 0.0
        for value in sorted(reach, reverse=True):
            total += value
            sums.append(1.0 + total)
        per_round.append([sums[min(n, len(sums)) - 1] if sums else 1.0 for n in range(1, n_max + 1)])
    return [statistics.fmean(column) for column in zip(*per_round)]


# ---------------------------------------------------------------- one round's tree

ROOT_COLOUR = "#111827"
VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}  # whitespace made visible on a node
LABEL_CHARS = 12
# The target's token after a tree's path: the lanes' colours, with what bonus and correction mean in a tree.
TREE_TARGET = {BONUS: "the target's bonus token (the path ended at a leaf)",
               CORRECTED: "the target's correction (no child of the path's end was accepted)"}


def _visible(text: str, token: int) -> str:
    """A node's label: whitespace shown, HTML escaped (plotly reads tags), long text cut, and an
    empty piece (a special token, half a character) named by its id."""
    if not text:
        return f"#{token}"
    shown = "".join(VISIBLE.get(c, c) for c in text)
    return html.escape(shown if len(shown) <= LABEL_CHARS else shown[: LABEL_CHARS - 1] + "…")


def tree_layout(parents: list[int]) -> tuple[list[int], list[float]]:
    """(depth, y) of each node: leaves on consecutive rows in depth-first order, each parent centred
    on its children, so no two branches cross. The root (-1) is at depth 0, not in the lists."""
    children: dict[int, list[int]] = {}
    for node, parent in enumerate(parents):
        children.setdefault(parent, []).append(node)
    depth, y = [0] * len(parents), [0.0] * len(parents)
    leaves = 0

    def place(node: int, level: int) -> float:
        nonlocal leaves
        below = [place(child, level + 1) for child in children.get(node, [])]
        row = statistics.fmean(below) if below else -float(leaves)  # the first leaf on top
        leaves += not below
        if node >= 0:
            depth[node], y[node] = level, row
        return row

    place(-1, 0)
    return depth, y


def _no_tree(message: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(**LAYOUT)
    fig.update_layout(height=220, title=dict(text="Token tree", x=0.01, xanchor="left"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(color="#6b7280"))
    return fig


def tree_figure(round_tree: dict | None) -> go.Figure:
    """One tree round (a `trees` entry of the stats JSON) drawn left to right: the root (the last
    committed token) at depth 0, every drafted node at its depth, the accepted path in the accepted
    colour, the target's own token hanging off the path's end as a correction or a bonus, and every
    other node grey. Hover shows a node's text, id, the draft's reach and its fate."""
    if not round_tree or not round_tree.get("tokens"):
        return _no_tree("tree drafters only: run draft-tree or lookup-tree to see each round's token tree")
    tokens, texts, path = round_tree["tokens"], round_tree["text"], set(round_tree["path"])
    parents, target = list(round_tree["parents"]), round_tree.get("target_token")
    if target is not None:  # drawn as one more node, the last child of the path's end
        parents.append(round_tree["path"][-1] if path else -1)
    depth, y = tree_layout(parents)
    fig = go.Figure()
    _tree_edges(fig, parents, depth, y, path, target is not None)
    for name, fate, nodes in ((FATES[ACCEPTED][2], ACCEPTED, sorted(path)),
                              ("drafted, not accepted", PLAIN, [i for i in range(len(tokens)) if i not in path])):
        _tree_nodes(fig, name, fate, [depth[i] for i in nodes], [y[i] for i in nodes],
                    [_visible(texts[i], tokens[i]) for i in nodes], [_node_hover(i, round_tree, path) for i in nodes])
    if target is not None:
        fate = round_tree.get("target_fate") if round_tree.get("target_fate") in TREE_TARGET else CORRECTED
        text = round_tree.get("target_text") or ""
        hover = f"<b>{html.escape(repr(text))}</b> (id {target})<br>the target's own token: {fate}"
        _tree_nodes(fig, TREE_TARGET[fate], fate, [depth[-1]], [y[-1]],
                    [_visible(text, target)], [hover])
    fig.add_scatter(x=[0], y=[_root_y(parents, y)], mode="markers+text", text=["▸"], hoverinfo="text",
                    textfont=dict(color="#ffffff", size=14), marker=dict(color=ROOT_COLOUR, size=22, symbol="square"),
                    hovertext=["root: the last committed token"], showlegend=False)
    _tree_layout(fig, round_tree, max(depth), rows=int(-min(y)) + 1)  # leaves
    return fig


def _root_y(parents: list[int], y: list[float]) -> float:
    return statistics.fmean([y[i] for i, p in enumerate(parents) if p < 0])


def _tree_edges(fig: go.Figure, parents: list[int], depth: list[int], y: list[float], path: set, target: bool):
    """Parent to child lines: the accepted path (and on to the target's token) thick and green."""
    root_y = _root_y(parents, y)
    kept = path | ({len(parents) - 1} if target else set())
    for nodes, line in (([i for i in range(len(parents)) if i not in kept], dict(color="#cbd5e1", width=1.5)),
                        (sorted(kept), dict(color=FATES[ACCEPTED][1], width=3))):
        xs, ys = [], []
        for i in nodes:
            parent = parents[i]
            xs += [0 if parent < 0 else depth[parent], depth[i], None]
            ys += [root_y if parent < 0 else y[parent], y[i], None]
        fig.add_scatter(x=xs, y=ys, mode="lines", line=line, hoverinfo="skip", showlegend=False)


def _tree_nodes(fig: go.Figure, name: str, fate: str, xs, ys, labels, hover) -> None:
    if not xs:
        return
    fill, edge, _ = FATES[fate]
    fig.add_scatter(x=xs, y=ys, mode="markers+text", name=name, text=labels, textposition="middle center",
                    textfont=dict(family="ui-monospace, SFMono-Regular, Menlo, monospace", size=11, color="#111827"),
                    marker=dict(symbol="square", size=30, color=fill, line=dict(color=edge, width=2)),
                    hovertext=hover, hoverinfo="text")


NODE_ORIGINS = {"table": "table", "context": "context: what followed these tokens before",
                "both": "table and context"}


def _node_hover(i: int, tree: dict, path: set) -> str:
    """A node's text, id, the draft's reach, and what happened to it."""
    parent = tree["parents"][i]
    if i in path:
        fate = "accepted"
    elif parent < 0 or parent in path:
        fate = "rejected (the target did not take it here)"
    else:
        fate = "untried (below a node the target rejected)"
    reach = tree.get("reach")
    from_where = tree.get("origin", "prompt lookup").split(":")[0]  # "table" or "context": no probabilities
    origins = tree.get("origins")
    if origins:  # token recycling: each node from the table, the context, or both
        from_where = NODE_ORIGINS.get(origins[i], origins[i])
    chance = f"no draft probabilities (from the {from_where})" if reach is None else f"draft reach {reach[i]:.3g}"
    return f"<b>{html.escape(repr(tree['text'][i]))}</b> (id {tree['tokens'][i]})<br>{chance}<br>{fate}"


def _tree_layout(fig: go.Figure, tree: dict, max_depth: int, rows: int) -> None:
    path, fate = tree["path"], tree.get("target_fate")
    end = f"the target's {fate} token" if fate else "the run ended inside the round"
    source = f" · from the {tree['origin'].split(':')[0]}" if tree.get("origin") else ""
    title = (f"Round {tree['round']}{source}: {len(tree['tokens'])} nodes, {len(path)} accepted along the path, "
             f"then {end}")
    fig.update_layout(**LAYOUT)
    # The title can be long: the legend goes on its own line below it.
    fig.update_layout(height=min(900, max(280, 34 * rows + 130)), margin=dict(t=75),
                      title=dict(text=title, x=0.01, xanchor="left", yanchor="top", y=0.99))
    fig.update_xaxes(title_text="depth (0 = the last committed token)", dtick=1, range=[-0.5, max_depth + 0.6],
                     showgrid=False, zeroline=False)
    fig.update_yaxes(visible=False)


def verify_cost_figure(result: RaceResult | None) -> go.Figure:
    """A target pass over n tokens, in single steps: the device's table measured at warm-up (a line)
    and this run's own verify passes (points), so a run whose passes cost more than the table says
    (a busy machine) shows it."""
    fig = _figure("Verify cost by width", "tokens in the target pass", "cost in decode steps")
    table = result.verify_costs if result else None
    if not table:
        return _waiting(fig)
    step = table.seconds[0]
    fig.add_trace(go.Scatter(x=list(table.widths), y=[table.steps(n) for n in table.widths], mode="lines+markers",
                             name="measured at warm-up", line=dict(color=THEORY)))
    points = [(n, seconds / step) for n, seconds in result.verify_points if step > 0]
    if points:
        fig.add_trace(go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="markers",
                                 name="this run's passes", marker=dict(color="#16a34a", size=7, opacity=0.6)))
    fig.update_xaxes(type="log", tickvals=list(table.widths))
    fig.update_layout(title=dict(text=f"Verify cost by width ({result.engine} engine)"))
    return fig
