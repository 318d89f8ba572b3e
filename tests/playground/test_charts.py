"""playground.charts: each chart's theory line follows its formula, and charts wait for rounds."""
from __future__ import annotations

import pytest


from helpers import run_stats
from specdec.playground import charts, render
from specdec.engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent
from specdec.engine.stats import accepted_pmf, position_acceptance, predicted_speedup, tau


# ---------------------------------------------------------------- charts

def rounds_fixture():
    def rnd(i, drafted, accepted, fates):
        return RoundEvent(i, drafted, tuple(range(drafted)), accepted, tuple(range(len(fates))), tuple(fates),
                          0.01, 0.02, (0.5,) * drafted, False)
    return [rnd(0, 4, 4, [ACCEPTED] * 4 + [BONUS]), rnd(1, 4, 1, [ACCEPTED, CORRECTED]),
            rnd(2, 2, 0, [CORRECTED]), rnd(3, 0, 0, [PLAIN])]


def test_tokens_per_round_chart_draws_tau_for_each_rounds_draft_length():
    fig = charts.tokens_per_round(rounds_fixture(), alpha=0.6)
    theory = next(t for t in fig.data if t.name == "τ(α̂, k)")
    assert list(theory.y) == pytest.approx([tau(0.6, 4), tau(0.6, 4), tau(0.6, 2), tau(0.6, 0)])
    accepted = next(t for t in fig.data if t.name == "accepted drafts")
    assert list(accepted.y) == [4, 1, 0, 0]


def test_a_round_that_drafted_nothing_is_a_plain_bar_not_a_bonus():
    fig = charts.tokens_per_round(rounds_fixture(), alpha=0.6)
    bars = {t.name: list(t.y) for t in fig.data if t.type == "bar"}
    assert bars["plain"] == [0, 0, 0, 1]
    assert bars["bonus"] == [1, 0, 0, 0] and bars["corrected"] == [0, 1, 1, 0]
    plain = next(t for t in fig.data if t.name == "plain")
    assert plain.marker.color == render.FATES[PLAIN][1]


def test_plain_rounds_stay_out_of_the_position_chart_and_the_measured_k():
    rounds = rounds_fixture()
    rates = position_acceptance([len(r.drafted) for r in rounds], [r.accepted for r in rounds])
    with_plain_left_out = position_acceptance([len(r.drafted) for r in rounds[:3]], [r.accepted for r in rounds[:3]])
    assert rates == with_plain_left_out
    run = run_stats(alpha=0.6, c=0.1, verify_cost=1.2, speedup=1.1, position_acceptance=tuple(rates))
    speedup = charts.all_charts(rounds, run, 8)[2]
    assert list(speedup.data[-1].x) == [pytest.approx(10 / 3)]  # mean k of the rounds that drafted


def test_histogram_expectation_is_the_mixture_of_truncated_geometric_pmfs():
    fig = charts.accepted_histogram(rounds_fixture(), alpha=0.6)
    measured, expected = fig.data
    assert list(measured.y) == [1, 1, 0, 0, 1]  # the round that drafted nothing is left out
    mixture = [2 * a + b for a, b in zip(accepted_pmf(0.6, 4), accepted_pmf(0.6, 2) + [0, 0])]
    assert list(expected.y) == pytest.approx(mixture)
    assert sum(expected.y) == pytest.approx(3)


def test_speedup_chart_follows_the_formula_and_marks_the_run():
    fig = charts.speedup_vs_k(0.7, 0.1, 1.5, 4, 1.3, k_max=8)
    theory, with_verify, measured = fig.data
    assert list(theory.y) == pytest.approx([predicted_speedup(0.7, g, 0.1) for g in range(1, 9)])
    assert list(with_verify.y) == pytest.approx([predicted_speedup(0.7, g, 0.1, 1.5) for g in range(1, 9)])
    assert (list(measured.x), list(measured.y)) == ([4], [1.3])


def test_speedup_chart_waits_for_a_measured_draft_cost():
    # alpha known, c not: no curve at c = 0, which would promise a free draft.
    fig = charts.speedup_vs_k(0.7, None, 1.5, 4, 1.3, k_max=8)
    assert not fig.data and fig.layout.annotations[0].text == "waiting for rounds…"


def test_charts_wait_for_rounds():
    for fig in charts.all_charts([], run_stats(), 8):
        assert fig.layout.annotations[0].text == "waiting for rounds…"
