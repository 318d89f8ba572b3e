"""playground.session: the interleaved race (each lane produces what it produces alone, the lane
behind goes next, divergence reports) and its replay."""
from __future__ import annotations

import pytest
import torch

from helpers import TEST_LIMITS, tiny_tokenizer
from helpers import perturbed, tiny_model

from specdec.engine.pair import Pair, Request
from specdec.engine.config import Sampling, Speculation
from specdec.playground.limits import check_request
from specdec.engine.loaded import Loaded
from specdec.engine.verdicts import Divergence
from specdec.playground.session import SPECULATIVE, STANDARD, Race, Step, lane_pieces, replay_frames

GOOD = dict(prompt="hello", target="embedded", draft="", drafter="prompt-lookup", k=4, adaptive_k=False,
            temperature=0.0, top_p=1.0, max_new_tokens=16, seed=0, policy="fixed", draft_layers="")


def check(limits=TEST_LIMITS, **changes):
    return check_request(limits, **{**GOOD, **changes})


# ---------------------------------------------------------------- race and replay

@pytest.fixture(scope="module")
def tiny_pair():
    tok = tiny_tokenizer()
    target = tiny_model("llama", seed=0, vocab=128)
    as_loaded = lambda m: Loaded("tiny", m, tok, torch.device("cpu"), torch.float32)  # noqa: E731
    return Pair(as_loaded(target), as_loaded(perturbed(target, 0.05)))


@pytest.mark.parametrize("drafter, sampling", [("draft-model", Sampling()), ("prompt-lookup", Sampling()),
                                               ("draft-model", Sampling(0.9, 0, 0.95, 3))])
def test_the_race_produces_what_each_lane_produces_alone(tiny_pair, drafter, sampling):
    request = Request("abc abc abc abc", 20, sampling, Speculation(3), drafter)
    ids = tiny_pair.prompt_ids(request)
    alone_std = [e.token for e in tiny_pair.standard(request, ids)]
    alone_spec = [t for r in tiny_pair.speculative(request, ids) for t in r.tokens]
    race = Race(tiny_pair, request, ids)
    order = []
    for lane in race:
        order.append(lane)
    assert race.standard.token_ids == alone_std and race.speculative.token_ids == alone_spec
    assert race.standard.text == tiny_pair.tokenizer.decode(alone_std, skip_special_tokens=True)
    assert [fate for _, fate in race.speculative.pieces] == [f for r in race.rounds for f in r.fates]
    assert set(order) == {STANDARD, SPECULATIVE} and len(race.steps) == len(order)
    stats = race.stats()
    assert stats.rounds == len(race.rounds) and stats.k_per_round == tuple(r.k for r in race.rounds)


def test_the_lane_that_is_behind_goes_next(tiny_pair):
    request = Request("abc abc abc", 20, Sampling(), Speculation(2), "draft-model")
    race = Race(tiny_pair, request, tiny_pair.prompt_ids(request))
    while not race.finished:
        before = {STANDARD: race.standard.seconds, SPECULATIVE: race.speculative.seconds}
        lane = race.step()
        other = SPECULATIVE if lane == STANDARD else STANDARD
        other_done = (race.speculative if other == SPECULATIVE else race.standard).finished
        assert other_done or before[lane] <= before[other]


TIE = Divergence(3, 5, 6, 0.0, 0.1, "float32", True)


def race_of(pair, sampling: Sampling) -> Race:
    request = Request("abc abc abc", 12, sampling, Speculation(3), "draft-model")
    return Race(pair, request, pair.prompt_ids(request))


def test_a_finished_greedy_race_reports_where_its_lanes_diverge(tiny_pair, monkeypatch):
    calls = []

    def divergence(prompt_ids, standard_ids, speculative_ids):
        calls.append((list(prompt_ids), list(standard_ids), list(speculative_ids)))
        return TIE

    monkeypatch.setattr(tiny_pair, "divergence", divergence, raising=False)
    race = race_of(tiny_pair, Sampling())
    race.step()
    assert not race.stats().compared  # only a finished race has both outputs to compare
    assert "divergence" not in race.stats().to_json()
    for _ in race:
        pass
    assert race.stats().divergence == race.stats().divergence == TIE and race.stats().compared
    assert race.stats().to_json()["divergence"] == TIE.to_json()
    prompt_ids = tiny_pair.prompt_ids(race.request)
    assert calls == [(prompt_ids, race.standard.token_ids, race.speculative.token_ids)]  # once, then kept


def test_a_sampled_race_has_neither_identical_nor_divergence(tiny_pair, monkeypatch):
    monkeypatch.setattr(tiny_pair, "divergence", lambda *a: pytest.fail("greedy runs only"), raising=False)
    race = race_of(tiny_pair, Sampling(0.9, 0, 0.95, 3))
    for _ in race:
        pass
    stats = race.stats()
    assert stats.identical is None and not stats.compared
    assert "identical" not in stats.to_json() and "divergence" not in stats.to_json()


def test_a_temperature_below_the_greedy_floor_is_reported_greedy(tiny_pair, monkeypatch):
    import app

    monkeypatch.setattr(tiny_pair, "divergence", lambda *a: None, raising=False)
    race = race_of(tiny_pair, Sampling(1e-6))
    for _ in race:
        pass
    result = app._result(race, check(temperature=1e-6), tiny_pair).to_json()
    assert result["greedy"] is True and result["identical"] is True and result["divergence"] is None


def steps(*spec):
    return [Step(lane, at, ((f"{lane[0]}{i}", ""),)) for i, (lane, at) in enumerate(spec)]


def test_replay_shows_steps_at_their_measured_time():
    trace = steps((STANDARD, 0.1), (SPECULATIVE, 0.25), (STANDARD, 0.2), (SPECULATIVE, 0.5), (STANDARD, 0.3))
    frames = list(replay_frames(trace, fps=100, max_seconds=10))
    times = [f[0] for f in frames]
    assert times == sorted(times) and times[0] == pytest.approx(0.1) and times[-1] == pytest.approx(0.5)
    assert frames[-1][1:] == (3, 2)
    assert frames[1][1:] == (2, 0)  # at 0.2 s, two standard tokens and no round yet
    assert [p for p, _ in lane_pieces(trace, SPECULATIVE, 1)] == ["s1"]


def test_a_long_race_is_replayed_faster_keeping_the_relative_pace():
    trace = steps((STANDARD, 30.0), (SPECULATIVE, 60.0))
    frames = list(replay_frames(trace, fps=10, max_seconds=6))
    assert [f[0] for f in frames] == pytest.approx([3.0, 6.0])


def test_a_replay_says_how_each_lane_ended():
    """Replaying a finished run ends on "done"; replaying one that was stopped (its lanes' last steps
    never finished them) ends on "stopped", as the lanes said when it stopped."""
    from types import SimpleNamespace

    import app

    server = SimpleNamespace(replay_max_seconds=10)
    finished = [Step(STANDARD, 0.1, (("a", ""),), True), Step(SPECULATIVE, 0.2, (("b", ""),), True)]
    stopped = [Step(STANDARD, 0.1, (("a", ""),)), Step(SPECULATIVE, 0.2, (("b", ""),))]
    for trace, state, flag in ((finished, " done</span>", "true"), (stopped, " stopped</span>", "false")):
        *_, last = app.replay(server, {"steps": trace, "titles": ("Standard", "Speculative")})
        assert all(state in lane and f'data-finished="{flag}"' in lane for lane in last), last


def test_an_integer_fields_range_is_written_out_whole():
    """The seed's help names its maximum as 2147483647, not 2.14748e+09."""
    import app

    assert app._number_field("seed", TEST_LIMITS, "Seed").info.endswith("from 0 to 2147483647")
