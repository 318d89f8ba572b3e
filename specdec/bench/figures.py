"""The benchmark's plotly figures, as HTML, and as PNG where a static image is needed (the README).

PNG export uses a headless Chrome/Chromium screenshot of the figure's own HTML rather than kaleido,
so it needs no extra Python package; without a browser the PNGs are skipped with a note.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .lanes import GENERATE, SPECULATIVE
from .medians import median, table_rows
from ..engine.stats import predicted_speedup

COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#db2777"]
LAYOUT = dict(template="plotly_white", font=dict(size=12), margin=dict(l=60, r=20, t=70, b=50))
LANE_COLORS = {GENERATE: "#6b7280", f"{SPECULATIVE} (ours)": "#dc2626", "hf-assisted": "#2563eb",
               "hf-prompt-lookup": "#16a34a"}  # a new peer takes the next free colour
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def _panels(summaries: list[dict]) -> list[tuple[str, str]]:
    return sorted({(s["setup"], s["drafter"]) for s in summaries})


def theory(summaries: list[dict]) -> go.Figure:
    """Measured speedup against α̂, one point per prompt and k (the fixed policy, median over repeats,
    bars to min/max), over the paper's curves τ(α, k) / (k c + 1) (dotted) at each panel's median
    measured c, and the same with the measured verify cost v in place of 1, τ / (k c + v) (solid)."""
    cells = [s for s in summaries if s["policy"] == "fixed" and s["alpha"] is not None and s["speedup"]]
    panels = _panels(cells)
    cols = min(2, max(1, len(panels)))
    rows = max(1, -(-len(panels) // cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"{a} · {b}" for a, b in panels],
                        vertical_spacing=0.14, horizontal_spacing=0.08)
    ks = sorted({s["k"] for s in cells})
    alphas = [i / 100 for i in range(0, 100)]
    top = max([s["speedup"]["max"] for s in cells] + [1.0])
    for n, (setup, drafter) in enumerate(panels):
        row, col = n // cols + 1, n % cols + 1
        for i, k in enumerate(ks):
            here = [s for s in cells if (s["setup"], s["drafter"], s["k"]) == (setup, drafter, k)]
            if not here:
                continue
            color, first = COLORS[i % len(COLORS)], n == 0
            c = median(s["c"] for s in here) or 0.0
            v = median(s["verify_cost"] for s in here) or 1.0
            fig.add_scatter(x=alphas, y=[predicted_speedup(a, k, c) for a in alphas], mode="lines", row=row, col=col,
                            line=dict(color=color, dash="dot", width=1.5), name=f"k={k}: τ/(kc+1)",
                            legendgroup=f"k{k}", showlegend=first,
                            hovertemplate=f"k={k} c={c:.2f}: τ/(kc+1)=%{{y:.2f}}<extra></extra>")
            fig.add_scatter(x=alphas, y=[predicted_speedup(a, k, c, v) for a in alphas], mode="lines", row=row,
                            col=col, line=dict(color=color, width=1.5), name=f"k={k}: τ/(kc+v)",
                            legendgroup=f"k{k}", showlegend=first,
                            hovertemplate=f"k={k} c={c:.2f} v={v:.2f}: τ/(kc+v)=%{{y:.2f}}<extra></extra>")
            fig.add_scatter(
                x=[s["alpha"] for s in here], y=[s["speedup"]["median"] for s in here], mode="markers",
                row=row, col=col, name=f"k={k}: measured", legendgroup=f"k{k}", showlegend=first,
                marker=dict(color=color, size=9, symbol=["circle" if s["temperature"] == 0 else "diamond"
                                                         for s in here]),
                error_y=dict(type="data", symmetric=False,
                             array=[s["speedup"]["max"] - s["speedup"]["median"] for s in here],
                             arrayminus=[s["speedup"]["median"] - s["speedup"]["min"] for s in here]),
                text=[f"{s['prompt']} T={s['temperature']:g} c={s['c']:.2f} v={s['verify_cost']:.2f}"
                      if s["c"] is not None and s["verify_cost"] is not None else s["prompt"] for s in here],
                hovertemplate="%{text}<br>α̂=%{x:.3f}<br>speedup=%{y:.2f}<extra></extra>")
        fig.add_hline(y=1.0, line=dict(color="#9ca3af", width=1), row=row, col=col)
        fig.update_xaxes(title_text="α̂ (MLE)", range=[0, 1], row=row, col=col)
        fig.update_yaxes(range=[0, max(2.0, top * 1.25)], row=row, col=col)
    for row in range(1, rows + 1):
        fig.update_yaxes(title_text="speedup", row=row, col=1)
    fig.update_layout(**LAYOUT, height=80 + 340 * rows, width=1000,
                      title="Speedup vs α̂ (● greedy, ◆ sampled). Dotted: (1-α^(k+1))/((1-α)(kc+1)); "
                            "solid: measured verify cost v for the 1")
    return fig


def speeds(summaries: list[dict]) -> go.Figure:
    """Throughput relative to our standard decoding, per category: model.generate, our speculative
    decoding and each peer, for every (setup, drafter, policy) at its most common k, greedy."""
    greedy = [s for s in summaries if s["temperature"] == 0]
    combos = sorted({(s["setup"], s["drafter"], s["policy"]) for s in greedy})
    fig = make_subplots(rows=max(1, len(combos)), cols=1, vertical_spacing=0.12 / max(1, len(combos)) * 2,
                        subplot_titles=[f"{a} · {b} · {c}" for a, b, c in combos])
    named: set[str] = set()
    for row, (setup, drafter, policy) in enumerate(combos, 1):
        here = [s for s in greedy if (s["setup"], s["drafter"], s["policy"]) == (setup, drafter, policy)]
        k = max({s["k"] for s in here}, key=lambda k: (sum(s["k"] == k for s in here), k == 4))
        rows = table_rows([s for s in here if s["k"] == k], ("category",))
        cats = [r["category"] for r in rows]
        peers = sorted({p for r in rows for p in r["peer_tps"]})
        series = [(GENERATE, [r["vs_standard"][GENERATE] for r in rows]),
                  (f"{SPECULATIVE} (ours)", [r["vs_standard"][SPECULATIVE] for r in rows])]
        series += [(p, [r["vs_standard"].get(p) for r in rows]) for p in peers]
        for name, ys in series:
            color = LANE_COLORS.setdefault(name, COLORS[len(LANE_COLORS) % len(COLORS)])
            fig.add_bar(x=cats, y=ys, name=name, marker_color=color, row=row, col=1,
                        legendgroup=name, showlegend=name not in named,
                        hovertemplate=f"{name} k={k}<br>%{{x}}: %{{y:.2f}}x<extra></extra>")
            named.add(name)
        fig.add_hline(y=1.0, line=dict(color="#111827", width=1, dash="dash"), row=row, col=1)
        fig.update_yaxes(title_text=f"x our standard (k={k})", row=row, col=1)
    fig.update_layout(**LAYOUT, barmode="group", height=260 * max(1, len(combos)) + 120, width=1000,
                      title="Tokens/s relative to our standard decoding (greedy; median over prompts of "
                            "per-repeat ratios; dashed line = 1)")
    return fig


def acceptance(summaries: list[dict]) -> go.Figure:
    """P(position i accepted | earlier ones were), median over prompts, per (setup, drafter) and k.
    The α-geometric model says every position accepts at α; a falling line shows it does not hold."""
    cells = [s for s in summaries if s["policy"] == "fixed" and s["temperature"] == 0]
    panels = _panels(cells)
    fig = make_subplots(rows=1, cols=max(1, len(panels)), subplot_titles=[f"{a} · {b}" for a, b in panels],
                        shared_yaxes=True)
    for col, (setup, drafter) in enumerate(panels, 1):
        for i, k in enumerate(sorted({s["k"] for s in cells})):
            here = [s["position_acceptance"] for s in cells
                    if (s["setup"], s["drafter"], s["k"]) == (setup, drafter, k)]
            if not here:
                continue
            ys = [median(p[j] if j < len(p) else None for p in here) for j in range(max(map(len, here)))]
            fig.add_scatter(x=list(range(1, len(ys) + 1)), y=ys, mode="lines+markers", name=f"k={k}",
                            legendgroup=f"k{k}", showlegend=col == 1, line=dict(color=COLORS[i % len(COLORS)]),
                            row=1, col=col)
        fig.update_xaxes(title_text="draft position", dtick=1, row=1, col=col)
    fig.update_yaxes(title_text="acceptance", range=[0, 1.05], row=1, col=1)
    fig.update_layout(**LAYOUT, title="Per-position acceptance (greedy, constant k)", height=400,
                      width=max(700, 400 * len(panels)))
    return fig


FIGURES = {"theory": theory, "speeds": speeds, "acceptance": acceptance}


def write_figures(summaries: list[dict], folder: Path, png: bool = True, plotlyjs: str = "directory",
                  log=print) -> dict[str, dict]:
    """Write every figure as HTML and, when a headless browser is found, as PNG. plotlyjs: "directory"
    (plotly.min.js once beside the figures: they open offline) or "cdn" (small files, need internet).
    Returns {name: {"html": path, "png": path or None}}."""
    folder.mkdir(parents=True, exist_ok=True)
    browser = find_browser() if png else None
    if png and browser is None:
        log("no Chrome/Chromium found: figures written as HTML only (set SPECDEC_CHROME to a browser for PNG)")
    written = {}
    for name, build in FIGURES.items():
        fig = build(summaries)
        html = folder / f"{name}.html"
        fig.write_html(html, include_plotlyjs=plotlyjs, full_html=True)
        image = folder / f"{name}.png"
        ok = browser is not None and screenshot(fig, image, browser)
        written[name] = {"html": html, "png": image if ok else None}
    return written


def find_browser() -> str | None:
    env = os.environ.get("SPECDEC_CHROME")
    if env:
        return env
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def screenshot(fig: go.Figure, path: Path, browser: str) -> bool:
    """Render the figure in a headless browser at its own size and save the page as PNG. The page
    carries plotly.js inline, so this works offline whatever the HTML figures link to."""
    width, height = int(fig.layout.width or 900), int(fig.layout.height or 500)
    page = fig.to_html(include_plotlyjs=True, full_html=True, config={"staticPlot": True},
                       default_width=f"{width}px", default_height=f"{height}px")
    page = page.replace("<head>", "<head><style>body{margin:0}</style>", 1)
    path.unlink(missing_ok=True)  # a stale image must not pass for a fresh one
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False, encoding="utf-8") as f:
        f.write(page)
    try:
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--user-data-dir={profile}", f"--window-size={width},{height}",
                            "--virtual-time-budget=10000", f"--screenshot={path}", Path(f.name).resolve().as_uri()],
                           capture_output=True, timeout=120, check=False)
        return path.is_file() and path.stat().st_size > 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        os.unlink(f.name)
