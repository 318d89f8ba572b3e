"""playground.render: lane HTML and its colours, the legend, the comparison table's rows."""
from __future__ import annotations


from helpers import race_result, run_stats
from specdec.engine.verdicts import Divergence
from specdec.playground import render
from specdec.engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN
from specdec.playground.session import SPECULATIVE, STANDARD, Step, lane_pieces


# ---------------------------------------------------------------- HTML

def test_lane_html_escapes_text_and_colours_each_fate():
    pieces = [("<script>", ACCEPTED), ("", CORRECTED), ("&", BONUS), (" x", CORRECTED)]
    html = render.lane_html(SPECULATIVE, "Speculative <k>", pieces, tokens=4, seconds=2.0, finished=True)
    assert "<script>" not in html and "&lt;script&gt;" in html and "Speculative &lt;k&gt;" in html
    assert html.count("tok-accepted") == 1 and html.count("tok-bonus") == 1 and html.count("tok-corrected") == 1
    assert "2.0</b> tok/s" in html and 'data-finished="true"' in html
    plain = render.lane_html(STANDARD, "Standard", [("a", ""), ("b", "")], 2, 0.0, False)
    assert "tok-" not in plain and "–</b> tok/s" in plain


def test_legend_explains_all_four_fates():
    legend = render.legend_html()
    for fate in (ACCEPTED, CORRECTED, BONUS, PLAIN):
        assert f"tok-{fate}" in legend and render.FATES[fate][2] in legend
    assert "nothing was drafted" in render.FATES[PLAIN][2]


def test_speculation_colours_stay_as_they_were():
    assert render.FATES[ACCEPTED][:2] == ("#bbf7d0", "#16a34a")
    assert render.FATES[CORRECTED][:2] == ("#fecaca", "#dc2626")
    assert render.FATES[BONUS][:2] == ("#bfdbfe", "#2563eb")


def test_a_plain_token_is_neutral_not_a_bonus():
    html = render.lane_html(SPECULATIVE, "Speculative", [("x", PLAIN)], tokens=1, seconds=1.0, finished=True)
    fill, edge, _ = render.FATES[PLAIN]
    assert "tok-plain" in html and fill in html and edge in html
    assert "tok-bonus" not in html and render.FATES[BONUS][0] not in html and render.FATES[BONUS][1] not in html
    assert {fill, edge}.isdisjoint(c for fate in (ACCEPTED, CORRECTED, BONUS) for c in render.FATES[fate][:2])


def test_replay_shows_plain_tokens_in_the_neutral_colour():
    trace = [Step(SPECULATIVE, 0.1, (("a", PLAIN),)), Step(SPECULATIVE, 0.2, (("b", ACCEPTED), ("c", BONUS)))]
    pieces = lane_pieces(trace, SPECULATIVE, 2)
    html = render.lane_html(SPECULATIVE, "Speculative", pieces, 3, 0.2, True)
    assert html.count("tok-plain") == 1 and html.count("tok-bonus") == 1 and render.FATES[PLAIN][0] in html


def table(run, greedy: bool = True, finished: bool = True) -> dict[str, list[str]]:
    rows = render.stats_rows(race_result(run, greedy=greedy, finished=finished))
    return {row[0]: row[1:] for row in rows}


def test_identical_row_only_for_finished_greedy_runs():
    assert table(run_stats())["outputs identical"][0] == "yes"
    assert "outputs identical" not in table(run_stats(), greedy=True, finished=False)
    sampled = run_stats(identical=None)  # the engine leaves it out under sampling
    assert "outputs identical" not in table(sampled, greedy=False)


def divergence(margin: float, tie: bool) -> Divergence:
    return Divergence(17, 5, 9, margin, 0.06, "bfloat16", tie)


def test_identical_row_tells_a_numerical_tie_from_a_real_divergence():
    tie = table(run_stats(identical=False).compared_with(divergence(0.031, True)))["outputs identical"][0]
    assert tie == "no: numerical tie at token 17 (top-2 logit margin 0.031 ≤ tolerance 0.06, bfloat16)"
    bug = table(run_stats(identical=False).compared_with(divergence(2.4, False)))["outputs identical"][0]
    assert bug == "no: diverged at token 17 (top-2 logit margin 2.4 > tolerance 0.06, bfloat16): this is a bug"


def test_identical_row_without_a_divergence_report_still_says_no():
    assert table(run_stats(identical=False).compared_with(None))["outputs identical"][0] == "no"


def test_rounds_with_no_draft_are_counted_in_the_table():
    row = table(run_stats(rounds=12, rounds_without_draft=3))["rounds with no draft"]
    assert row[0] == "3 of 12" and "plain" in row[1]


def test_predictions_are_explained_over_each_rounds_own_draft_length():
    rows = table(run_stats())
    assert "m_r" in rows["τ (mean tokens per round)"][1]
    assert "Σ τ(α̂, m_r) / Σ (m_r·c + 1)" in rows["speedup, predicted"][1]
    assert "Σ τ(α̂, m_r)" in rows["speedup, predicted with verify cost"][1]
    assert rows["k (tokens drafted per round)"][1] == "starting k when adaptive"
