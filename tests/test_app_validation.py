"""The app's UI-independent pieces without a server: input checks, presets, the model store, the
interleaved race and its replay, the HTML colouring and the charts' theory lines."""
from __future__ import annotations

import json
import math

import pytest
import torch

from test_app_support import TEST_LIMITS, tiny_tokenizer, with_limits
from conftest import perturbed, tiny_model

import space_config
from specdec import charts, presets, render, store as store_module
from specdec.compare import Pair, Request
from specdec.config import Sampling, Speculation
from specdec.drafters import DRAFTERS
from specdec.events import ACCEPTED, BONUS, CORRECTED, RoundEvent
from specdec.limits import InvalidInput, check_prompt_tokens, check_request
from specdec.loading import Loaded
from specdec.session import SPECULATIVE, STANDARD, Race, Step, lane_pieces, replay_frames
from specdec.stats import accepted_pmf, predicted_speedup, tau
from specdec.store import LoadError, ModelStore

GOOD = dict(prompt="hello", target="embedded", draft="", drafter="prompt-lookup", k=4, adaptive=False,
            temperature=0.0, top_p=1.0, max_new_tokens=16, seed=0)


def check(limits=TEST_LIMITS, **changes):
    return check_request(limits, **{**GOOD, **changes})


# ---------------------------------------------------------------- limits

def test_a_good_request_comes_back_typed():
    checked = check(k=4.0, max_new_tokens="16", temperature=0, seed=7.0)
    assert (checked.k, checked.max_new_tokens, checked.seed) == (4, 16, 7)
    assert isinstance(checked.temperature, float) and checked.draft is None


@pytest.mark.parametrize("changes, message", [
    ({"temperature": math.nan}, "temperature must be a finite number"),
    ({"temperature": math.inf}, "temperature must be a finite number"),
    ({"top_p": math.nan}, "top_p must be a finite number"),
    ({"k": True}, "k must be a finite number"),
    ({"k": None}, "k must be a finite number"),
    ({"max_new_tokens": 10**9}, "max_new_tokens must be in [1, 48]"),
    ({"adaptive": "yes"}, "adaptive_k must be true or false"),
    ({"prompt": None}, "prompt is empty"),
    ({"target": ""}, "target model is empty"),
    ({"target": "org/name/extra"}, "no such model folder"),
    ({"target": "a..b"}, "unknown target model"),
])
def test_bad_values_name_the_input_and_its_limit(changes, message):
    with pytest.raises(InvalidInput) as error:
        check(**changes)
    assert message in str(error.value)


def test_prompt_token_limit():
    check_prompt_tokens(200, TEST_LIMITS)
    with pytest.raises(InvalidInput, match="201 tokens .* max_prompt_tokens = 200"):
        check_prompt_tokens(201, TEST_LIMITS)


def test_public_limits_allow_only_the_presets_models(tmp_path):
    public = space_config.PUBLIC_LIMITS
    assert check(public, target="HuggingFaceTB/SmolLM2-1.7B-Instruct", drafter="draft-model",
                 draft="HuggingFaceTB/SmolLM2-135M-Instruct").draft == "HuggingFaceTB/SmolLM2-135M-Instruct"
    for target in ("gpt2", str(tmp_path), "org/any-model"):
        with pytest.raises(InvalidInput, match="unknown target model .* only serves"):
            check(public, target=target)
    with pytest.raises(InvalidInput, match="max_new_tokens must be in \\[1, 256\\]"):
        check(public, max_new_tokens=257)


def test_remote_code_folder_is_refused_unless_allowed(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"auto_map": {"AutoModelForCausalLM": "x.Y"}}))
    with pytest.raises(InvalidInput, match="needs trust_remote_code"):
        check(target=str(tmp_path))
    assert check(with_limits(allow_remote_code=True), target=str(tmp_path)).target == str(tmp_path)


def test_the_draft_is_only_taken_for_the_draft_model_drafter():
    assert check(draft="whatever/model").draft is None
    assert check(drafter="draft-model", draft="embedded").draft == "embedded"


# ---------------------------------------------------------------- presets

def test_presets_cover_the_issue_pairs_and_every_drafter_is_known():
    assert presets.DEFAULT.target == "embedded" and presets.DEFAULT.drafter == "prompt-lookup"
    assert all(p.drafter in DRAFTERS for p in presets.PRESETS)
    pairs = {(p.target, p.draft) for p in presets.PRESETS}
    assert {("qwen-coder-1.5b", "qwen-coder-0.5b"),
            ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
            ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
            ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct")} <= pairs


def test_qwen_preset_is_available_once_fetched(tmp_path, monkeypatch):
    from specdec import offline

    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    qwen = next(p for p in presets.PRESETS if p.target == "qwen-coder-1.5b")
    assert not qwen.available()
    assert any("not fetched yet" in label for label, _ in presets.choices())
    (tmp_path / "gguf").mkdir()
    for spec in (offline.QWEN_TARGET, offline.QWEN_DRAFT):
        (tmp_path / "gguf" / (spec["file"] + ".sha256")).write_text("x")
    assert qwen.available()


# ---------------------------------------------------------------- store

def fake_loaded(name):
    return Loaded(name, torch.nn.Linear(1, 1), None, torch.device("cpu"), torch.float32)


def test_store_evicts_least_recently_used_only_after_a_successful_load():
    loads = []

    def loader(spec, **kwargs):
        loads.append(spec)
        if spec == "bad":
            raise OSError("no such repo")
        return fake_loaded(spec)

    store = ModelStore(max_models=2, loader=loader, hub_probe=lambda: True)
    log = lambda message: None  # noqa: E731
    store.model("embedded", log)
    store.model("qwen-coder-0.5b", log)
    with pytest.raises(LoadError, match="could not load model 'bad': no such repo"):
        store.model("bad", log)
    assert store.loaded() == ["embedded", "qwen-coder-0.5b"]  # nothing was dropped for the failure
    store.model("embedded", log)  # now the most recently used
    store.model("qwen-coder-1.5b", log)
    assert store.loaded() == ["embedded", "qwen-coder-1.5b"]
    assert loads.count("embedded") == 1


def test_out_of_memory_while_loading_is_not_a_load_error_and_frees(monkeypatch):
    emptied = []
    monkeypatch.setattr(store_module.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(store_module.torch.cuda, "empty_cache", lambda: emptied.append(1))

    def loader(spec, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

    with pytest.raises(torch.OutOfMemoryError):
        ModelStore(loader=loader).model("embedded", print)
    assert emptied


def test_unreachable_hub_is_reported_without_trying_to_load():
    store = ModelStore(loader=lambda spec, **kw: pytest.fail("must not load"), hub_probe=lambda: False)
    with pytest.raises(LoadError, match="Hub is unreachable"):
        store.model("nobody/no-such-model", print)


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
    assert stats["drafted"] == [len(r.drafted) for r in race.rounds] and stats["rounds"] == len(race.rounds)


def test_the_lane_that_is_behind_goes_next(tiny_pair):
    request = Request("abc abc abc", 20, Sampling(), Speculation(2), "draft-model")
    race = Race(tiny_pair, request, tiny_pair.prompt_ids(request))
    while not race.finished:
        before = {STANDARD: race.standard.seconds, SPECULATIVE: race.speculative.seconds}
        lane = race.step()
        other = SPECULATIVE if lane == STANDARD else STANDARD
        other_done = (race.speculative if other == SPECULATIVE else race.standard).finished
        assert other_done or before[lane] <= before[other]


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


# ---------------------------------------------------------------- HTML

def test_lane_html_escapes_text_and_colours_each_fate():
    pieces = [("<script>", ACCEPTED), ("", CORRECTED), ("&", BONUS), (" x", CORRECTED)]
    html = render.lane_html(SPECULATIVE, "Speculative <k>", pieces, tokens=4, seconds=2.0, finished=True)
    assert "<script>" not in html and "&lt;script&gt;" in html and "Speculative &lt;k&gt;" in html
    assert html.count("tok-accepted") == 1 and html.count("tok-bonus") == 1 and html.count("tok-corrected") == 1
    assert "2.0</b> tok/s" in html and 'data-finished="true"' in html
    plain = render.lane_html(STANDARD, "Standard", [("a", ""), ("b", "")], 2, 0.0, False)
    assert "tok-" not in plain and "–</b> tok/s" in plain


def test_legend_names_all_three_fates():
    legend = render.legend_html()
    for fate in (ACCEPTED, CORRECTED, BONUS):
        assert f"tok-{fate}" in legend and render.FATES[fate][2] in legend


def test_identical_row_only_for_finished_greedy_runs():
    stats = {key: None for key in ("speedup", "predicted_speedup", "predicted_speedup_with_verify_cost", "alpha",
                                   "tokens_per_round", "tau", "c", "verify_cost")}
    stats.update(k=4, rounds=0, identical=True)
    lane = {"tokens_per_s": None, "tokens": 0, "seconds": 0.0}
    assert render.stats_rows(stats, lane, lane, greedy=True, finished=True)[-1][:2] == ["outputs identical", "yes"]
    assert all(r[0] != "outputs identical" for r in render.stats_rows(stats, lane, lane, False, True))
    assert all(r[0] != "outputs identical" for r in render.stats_rows(stats, lane, lane, True, False))


# ---------------------------------------------------------------- charts

def rounds_fixture():
    def rnd(i, drafted, accepted, fates):
        return RoundEvent(i, drafted, tuple(range(drafted)), accepted, tuple(range(len(fates))), tuple(fates),
                          0.01, 0.02, (0.5,) * drafted, False)
    return [rnd(0, 4, 4, [ACCEPTED] * 4 + [BONUS]), rnd(1, 4, 1, [ACCEPTED, CORRECTED]),
            rnd(2, 2, 0, [CORRECTED]), rnd(3, 0, 0, [BONUS])]


def test_tokens_per_round_chart_draws_tau_for_each_rounds_draft_length():
    fig = charts.tokens_per_round(rounds_fixture(), alpha=0.6)
    theory = next(t for t in fig.data if t.name == "τ(α̂, k)")
    assert list(theory.y) == pytest.approx([tau(0.6, 4), tau(0.6, 4), tau(0.6, 2), tau(0.6, 0)])
    accepted = next(t for t in fig.data if t.name == "accepted drafts")
    assert list(accepted.y) == [4, 1, 0, 0]


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


def test_charts_wait_for_rounds():
    for fig in charts.all_charts([], {"alpha": None, "k": 4, "position_acceptance": []}, 8):
        assert fig.layout.annotations[0].text == "waiting for rounds…"
