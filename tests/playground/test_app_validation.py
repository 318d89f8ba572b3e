"""The app's UI-independent pieces without a server: input checks, presets, the model store, the
interleaved race and its replay, the HTML colouring and the charts' theory lines."""
from __future__ import annotations

import json
import math
import re
import sys

import gradio as gr
import pytest
import torch

from helpers import TEST_LIMITS, fake_spaces, tiny_tokenizer, with_limits
from helpers import perturbed, tiny_model

import space_config
from specdec.playground import charts, presets, render, store as store_module
from specdec.engine.pair import Pair, Request
from specdec.engine.config import Sampling, Speculation
from specdec.engine.drafters import DRAFTERS, needs_draft_model
from specdec.engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent
from specdec.playground.limits import InvalidInput, check_prompt_tokens, check_request
from specdec.engine.loaded import Loaded
from specdec.playground.session import SPECULATIVE, STANDARD, Race, Step, lane_pieces, replay_frames
from specdec.engine.stats import accepted_pmf, position_acceptance, predicted_speedup, tau
from specdec.playground.store import LoadError, ModelStore
from specdec.playground.zerogpu import duration_seconds

GOOD = dict(prompt="hello", target="embedded", draft="", drafter="prompt-lookup", k=4, adaptive_k=False,
            temperature=0.0, top_p=1.0, max_new_tokens=16, seed=0, policy="fixed", draft_layers="")


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
    ({"adaptive_k": "yes"}, "adaptive_k must be true or false"),
    ({"prompt": None}, "prompt is empty"),
    ({"target": ""}, "target model is empty"),
    ({"target": "org/name/extra"}, "no such model folder"),
    ({"target": "a..b"}, "unknown target model"),
])
def test_bad_values_name_the_input_and_its_limit(changes, message):
    with pytest.raises(InvalidInput) as error:
        check(**changes)
    assert message in str(error.value)


HUGE = 10**400  # valid JSON, but float(HUGE) and math.isfinite(HUGE) raise OverflowError
JUNK = {"huge int": HUGE, "huge negative int": -HUGE, "inf": math.inf, "nan": math.nan, "list": ["embedded", 4],
        "dict": {"k": 4}, "None": None, "bool": True, "arbitrary string": "zebra!", "empty string": ""}
# The name each argument has in the API and in its messages.
API_NAMES = {**{name: name for name in GOOD}, "adaptive_k": "adaptive_k"}
ALLOWED = {("prompt", "arbitrary string"), ("adaptive_k", "bool"),
           ("draft_layers", "None"), ("draft_layers", "empty string")}  # not junk for that argument
# The draft is only read by drafters that need one, the layers only by the self drafter.
READER = {"draft": {"drafter": "draft-model"}, "draft_layers": {"drafter": "self"}}


def junk_cases():
    return [pytest.param(name, value, id=f"{name}-{label}") for name in GOOD for label, value in JUNK.items()
            if (name, label) not in ALLOWED]


@pytest.mark.parametrize("name, value", junk_cases())
def test_junk_of_any_type_in_any_argument_is_refused_naming_the_argument(name, value):
    changes = {name: value, **READER.get(name, {})}
    with pytest.raises(InvalidInput) as error:
        check(**changes)
    message = str(error.value)
    assert re.search(rf"\b{API_NAMES[name]}\b", message), message
    assert len(message) < 400  # a huge value is not echoed back whole


@pytest.mark.parametrize("name, limit", [("k", "[1, 8]"), ("max_new_tokens", "[1, 48]"), ("seed", "[0, 2.14748e+09]"),
                                         ("temperature", "[0, 2]"), ("top_p", "(0, 1]")])
@pytest.mark.parametrize("value", [HUGE, -HUGE, 10**5000], ids=["1e400", "-1e400", "1e5000"])
def test_huge_integers_get_the_range_not_an_overflow(name, limit, value):
    with pytest.raises(InvalidInput, match=re.escape(f"{name} must be in {limit}, got ")):
        check(**{name: value})


@pytest.mark.parametrize("name", ["prompt", "target", "draft"])
@pytest.mark.parametrize("value", [["embedded"], {"a": 1}, 7, True])
def test_text_arguments_of_another_type_say_so(name, value):
    with pytest.raises(InvalidInput, match=f"{name}( model)? must be text, got {type(value).__name__}"):
        check(**{name: value, "drafter": "draft-model"})


def test_a_draft_of_another_type_is_refused_even_when_unused():
    with pytest.raises(InvalidInput, match="draft model must be text"):
        check(draft=["embedded"])
    assert check(draft=None).draft is None


ZERO_GPU = {"min_seconds": 20, "max_seconds": 120, "load_seconds": 40, "seconds_per_token": 0.1}


@pytest.mark.parametrize("value", [pytest.param(v, id=label) for label, v in
                                   {**JUNK, "10**5000": 10**5000, "zero": 0, "negative": -3, "text": "16"}.items()])
@pytest.mark.parametrize("needs_load", [False, True])
def test_zerogpu_duration_gives_junk_the_minimum_and_never_raises(value, needs_load):
    assert duration_seconds(value, needs_load, ZERO_GPU) == ZERO_GPU["min_seconds"]


def test_zerogpu_duration_of_a_count_too_large_for_its_seconds_is_the_maximum():
    assert duration_seconds(1e308, False, ZERO_GPU) == ZERO_GPU["max_seconds"]


@pytest.fixture()
def zerogpu_compare(monkeypatch):
    """The app's /compare handler under a fake ZeroGPU, and the durations it asked for."""
    import app

    asked: list = []
    monkeypatch.setitem(sys.modules, "spaces", fake_spaces(asked))
    compare = app.make_handlers(TEST_LIMITS, ModelStore(max_models=1, device="cpu"), 3.0)[0]
    return compare, asked


@pytest.mark.parametrize("name, value", junk_cases())
def test_zerogpu_duration_runs_before_validation_and_never_masks_its_message(zerogpu_compare, name, value):
    import app

    compare, asked = zerogpu_compare
    request = {**GOOD, name: value, **READER.get(name, {})}
    with pytest.raises(gr.Error) as error:
        next(compare(*request.values()))
    assert re.search(rf"\b{API_NAMES[name]}\b", str(error.value.message)), error.value.message
    assert asked == [app.space_config.ZERO_GPU["min_seconds"]]


def test_zerogpu_duration_of_a_valid_request_counts_tokens_and_loading():
    import app

    settings, store = app.space_config.ZERO_GPU, ModelStore(max_models=1, device="cpu")
    request = {**GOOD, "max_new_tokens": 48}
    expected = round(settings["load_seconds"] + 2 * 48 * settings["seconds_per_token"])
    assert app.request_duration(TEST_LIMITS, store, *request.values()) == expected


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


def test_a_drafter_that_needs_a_draft_names_those_that_need_none():
    with pytest.raises(InvalidInput, match="the cross-tokenizer drafter needs a draft model; pick one, or use "
                                           "prompt-lookup, self, lookup-tree, recycling or mixed, which need "
                                           "none"):
        check(drafter="cross-tokenizer")
    assert check(drafter="cross-tokenizer", draft="embedded").draft == "embedded"
    assert check(drafter="self", draft="embedded").draft is None  # self drafts from the target


# ---------------------------------------------------------------- the self drafter's layers

@pytest.mark.parametrize("typed, kept", [("", ""), (None, ""), ("  ", ""), ("0-7", "0-7"), ("3", "3"),
                                         (" 0-5, 9 ,11 ", "0-5, 9 ,11"), ("0 - 2", "0 - 2"), ("9999", "9999")])
def test_draft_layers_are_kept_as_typed_for_the_self_drafter(typed, kept):
    assert check(drafter="self", draft_layers=typed).draft_layers == kept


@pytest.mark.parametrize("typed, message", [
    ("abc", "draft_layers must be at most 200 characters of digits, commas, dashes and spaces"),
    ("0-7;9", "draft_layers must be at most 200 characters"),
    ("0.5", "draft_layers must be at most 200 characters"),
    ("-3", "cannot read '-3'"),
    ("0-", "cannot read '0-'"),
    ("1--2", "cannot read '1--2'"),
    ("1-2-3", "cannot read '1-2-3'"),
    ("1,,2", "cannot read ''"),
    ("3,", "cannot read ''"),
    ("1 2", "cannot read '1 2'"),
    ("9-3", "the range 9-3 goes down; write it 3-9"),
    ("0-10000", "layer 10000 is past the limit of 9999"),
    ("0-" + "9" * 190, "is past the limit of 9999"),
    ("1," * 100 + "1", "at most 200 characters"),
    (7, "draft_layers must be text, got int 7"),
    (["0-3"], "draft_layers must be text, got list"),
])
def test_bad_draft_layers_name_the_limit(typed, message):
    with pytest.raises(InvalidInput) as error:
        check(drafter="self", draft_layers=typed)
    assert message in str(error.value) and len(str(error.value)) < 400


def test_draft_layers_are_ignored_unless_the_drafter_is_self():
    for drafter, draft in (("prompt-lookup", ""), ("draft-model", "embedded"), ("cross-tokenizer", "embedded")):
        assert check(drafter=drafter, draft=draft, draft_layers="no such layers").draft_layers is None
    assert check().draft_layers is None
    with pytest.raises(InvalidInput, match="draft_layers must be text"):  # a wrong type is refused anywhere
        check(draft_layers=3)


def test_the_self_drafters_titles_name_its_layers():
    import app

    checked = check(drafter="self", draft_layers="")
    assert app._titles(checked) == ("Standard · embedded", "Speculative · self · layers first half · k=4")
    assert app._titles(checked, tuple(range(15)))[1] == "Speculative · self · layers 0-14 · k=4"
    assert app._titles(check(drafter="self", draft_layers="0-5,9,11"), (0, 1, 2, 3, 4, 5, 9, 11))[1] == \
        "Speculative · self · layers 0-5,9,11 · k=4"
    assert app._titles(check(drafter="self", draft_layers="0-3"))[1] == "Speculative · self · layers 0-3 · k=4"
    cross = check(drafter="cross-tokenizer", draft="qwen-coder-0.5b", policy="cost")
    assert app._titles(cross)[1] == "Speculative · cross-tokenizer ← qwen-coder-0.5b · k from 4, cost policy"


def test_the_loaded_targets_depth_checks_the_layers():
    import app

    class Target:  # what _draft_layers reads of a pair: its target's decoder layers
        model = tiny_model("llama", layers=4)

    pair = type("P", (), {"target": Target})()
    assert app._draft_layers(check(), pair) is None
    assert app._draft_layers(check(drafter="self"), pair) == (0, 1)
    assert app._draft_layers(check(drafter="self", draft_layers="0-1, 3"), pair) == (0, 1, 3)
    for typed, message in (("4", "draft_layers '4': layer range '4' must run upwards within [0, 3] (the model has 4"),
                           ("0-3", "draft_layers '0-3': a draft from all 4 layers is the target itself"),
                           ("0-9999", "layer range '0-9999' must run upwards within [0, 3] (the model has 4")):
        with pytest.raises(InvalidInput) as error:
            app._draft_layers(check(drafter="self", draft_layers=typed), pair)
        assert message in str(error.value) and len(str(error.value)) < 450
    from transformers import GPT2Config, GPT2LMHeadModel

    Target.model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=8, n_head=2, vocab_size=10))  # layers at .h
    with pytest.raises(InvalidInput, match="the self drafter cannot draft with embedded: GPT2LMHeadModel keeps no"):
        app._draft_layers(check(drafter="self"), pair)


def test_layer_ranges_are_written_as_the_field_takes_them():
    from specdec.engine.drafters.layers import parse_layers

    for layers in [(0,), (0, 1, 2, 3), (0, 1, 2, 3, 9, 11, 12), (1, 3, 5), (0, 2, 3, 4, 7)]:
        text = render.layer_ranges(layers)
        assert parse_layers(text, 16) == layers
    assert render.layer_ranges((0, 1, 2, 3, 9, 11, 12)) == "0-3,9,11-12"
    assert render.drafter_label("self", (0, 1, 2)) == "self · layers 0-2"
    assert render.drafter_label("hybrid", None) == "hybrid"


# ---------------------------------------------------------------- presets

def test_presets_cover_the_issue_pairs_and_every_drafter_is_known():
    assert presets.DEFAULT.target == "embedded" and presets.DEFAULT.drafter == "prompt-lookup"
    assert all(p.drafter in DRAFTERS for p in presets.PRESETS)
    assert len(presets.BY_LABEL) == len(presets.PRESETS)  # labels are unique
    pairs = {(p.target, p.draft) for p in presets.PRESETS}
    assert {("qwen-coder-1.5b", "qwen-coder-0.5b"),
            ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
            ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
            ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct")} <= pairs


def test_self_and_cross_tokenizer_presets():
    by = {p.drafter: p for p in presets.PRESETS if p.drafter in ("self", "cross-tokenizer")}
    assert (by["self"].label, by["self"].target, by["self"].draft) == (
        "SmolLM2-135M · self-speculation (offline)", "embedded", "")
    assert (by["cross-tokenizer"].label, by["cross-tokenizer"].target, by["cross-tokenizer"].draft) == (
        "Qwen2.5-Coder 1.5B ← SmolLM2-135M · cross-tokenizer (offline, after fetch)", "qwen-coder-1.5b", "embedded")


@pytest.mark.parametrize("preset", presets.PRESETS, ids=lambda p: p.label)
@pytest.mark.parametrize("limits", [TEST_LIMITS, space_config.PUBLIC_LIMITS], ids=["local", "public"])
def test_every_preset_is_a_valid_request_locally_and_in_public_mode(preset, limits):
    import app

    checked = check(limits, target=preset.target, draft=preset.draft, drafter=preset.drafter)
    assert (checked.target, checked.draft or "", checked.drafter) == (preset.target, preset.draft, preset.drafter)
    assert bool(preset.draft) == needs_draft_model(preset.drafter)  # a draft exactly where the drafter reads one
    note = app.make_handlers(limits, ModelStore(device="cpu"), 3.0)[2](preset.label)
    assert note[:3] == (preset.target, preset.draft, preset.drafter)


def test_public_mode_serves_every_presets_models_and_no_other():
    assert set(presets.allowlist()) == {m for p in presets.PRESETS for m in (p.target, p.draft) if m}
    assert space_config.PUBLIC_LIMITS.allowlist == presets.allowlist() and "" not in presets.allowlist()


def test_qwen_preset_is_available_once_fetched(tmp_path, monkeypatch):
    from specdec.models import offline

    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    qwen = next(p for p in presets.PRESETS if p.target == "qwen-coder-1.5b")
    assert not qwen.available()
    assert any("not fetched yet" in label for label, _ in presets.choices())
    (tmp_path / "gguf").mkdir()
    cross = next(p for p in presets.PRESETS if p.drafter == "cross-tokenizer")
    assert not cross.available()
    (tmp_path / "gguf" / (offline.QWEN_TARGET["file"] + ".sha256")).write_text("x")
    assert cross.available() and not qwen.available()  # the cross pair needs only the 1.5B target
    (tmp_path / "gguf" / (offline.QWEN_DRAFT["file"] + ".sha256")).write_text("x")
    assert qwen.available() and cross.available()
    assert all(p.available() for p in presets.PRESETS if "qwen-coder" not in (p.target + p.draft))


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


def race_of(pair, sampling: Sampling) -> Race:
    request = Request("abc abc abc", 12, sampling, Speculation(3), "draft-model")
    return Race(pair, request, pair.prompt_ids(request))


def test_a_finished_greedy_race_reports_where_its_lanes_diverge(tiny_pair, monkeypatch):
    calls = []

    def divergence(prompt_ids, standard_ids, speculative_ids):
        calls.append((list(prompt_ids), list(standard_ids), list(speculative_ids)))
        return {"index": 3, "numerical_tie": True}

    monkeypatch.setattr(tiny_pair, "divergence", divergence, raising=False)
    race = race_of(tiny_pair, Sampling())
    race.step()
    assert "divergence" not in race.stats()  # only a finished race has both outputs to compare
    for _ in race:
        pass
    assert race.stats()["divergence"] == race.stats()["divergence"] == {"index": 3, "numerical_tie": True}
    prompt_ids = tiny_pair.prompt_ids(race.request)
    assert calls == [(prompt_ids, race.standard.token_ids, race.speculative.token_ids)]  # once, then kept


def test_a_sampled_race_has_neither_identical_nor_divergence(tiny_pair, monkeypatch):
    monkeypatch.setattr(tiny_pair, "divergence", lambda *a: pytest.fail("greedy runs only"), raising=False)
    race = race_of(tiny_pair, Sampling(0.9, 0, 0.95, 3))
    for _ in race:
        pass
    stats = race.stats()
    assert "identical" not in stats and "divergence" not in stats


def test_a_temperature_below_the_greedy_floor_is_reported_greedy(tiny_pair, monkeypatch):
    import app

    monkeypatch.setattr(tiny_pair, "divergence", lambda *a: None, raising=False)
    race = race_of(tiny_pair, Sampling(1e-6))
    for _ in race:
        pass
    result = app._result(race, check(temperature=1e-6), tiny_pair)
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


def table_stats(**changes) -> dict:
    stats = {key: None for key in ("speedup", "predicted_speedup", "predicted_speedup_with_verify_cost", "alpha",
                                   "tokens_per_round", "tau", "c", "verify_cost")}
    stats.update(k=4, rounds=0, rounds_without_draft=0, identical=True, divergence=None)
    stats.update(changes)
    return stats


LANE = {"tokens_per_s": None, "tokens": 0, "seconds": 0.0}


def table(stats: dict, greedy: bool = True, finished: bool = True) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in render.stats_rows(stats, LANE, LANE, greedy, finished)}


def test_identical_row_only_for_finished_greedy_runs():
    assert table(table_stats())["outputs identical"][0] == "yes"
    assert "outputs identical" not in table(table_stats(), greedy=True, finished=False)
    sampled = table_stats()
    del sampled["identical"], sampled["divergence"]  # the engine leaves them out under sampling
    assert "outputs identical" not in table(sampled, greedy=False)


def divergence(margin: float, tie: bool) -> dict:
    return {"index": 17, "standard_token": 5, "speculative_token": 9, "margin": margin, "tolerance": 0.06,
            "dtype": "bfloat16", "numerical_tie": tie}


def test_identical_row_tells_a_numerical_tie_from_a_real_divergence():
    tie = table(table_stats(identical=False, divergence=divergence(0.031, True)))["outputs identical"][0]
    assert tie == "no: numerical tie at token 17 (top-2 logit margin 0.031 ≤ tolerance 0.06, bfloat16)"
    bug = table(table_stats(identical=False, divergence=divergence(2.4, False)))["outputs identical"][0]
    assert bug == "no: diverged at token 17 (top-2 logit margin 2.4 > tolerance 0.06, bfloat16): this is a bug"


def test_identical_row_without_a_divergence_report_still_says_no():
    assert table(table_stats(identical=False, divergence=None))["outputs identical"][0] == "no"


def test_rounds_with_no_draft_are_counted_in_the_table():
    row = table(table_stats(rounds=12, rounds_without_draft=3))["rounds with no draft"]
    assert row[0] == "3 of 12" and "plain" in row[1]


def test_predictions_are_explained_over_each_rounds_own_draft_length():
    rows = table(table_stats())
    assert "m_r" in rows["τ (mean tokens per round)"][1]
    assert "Σ τ(α̂, m_r) / Σ (m_r·c + 1)" in rows["speedup, predicted"][1]
    assert "Σ τ(α̂, m_r)" in rows["speedup, predicted with verify cost"][1]
    assert rows["k (tokens drafted per round)"][1] == "starting k when adaptive"


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
    speedup = charts.all_charts(rounds, {"alpha": 0.6, "k": 4, "c": 0.1, "verify_cost": 1.2, "speedup": 1.1,
                                         "position_acceptance": rates}, 8)[2]
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


def test_charts_wait_for_rounds():
    for fig in charts.all_charts([], {"alpha": None, "k": 4, "position_acceptance": []}, 8):
        assert fig.layout.annotations[0].text == "waiting for rounds…"


def test_policy_is_checked_and_adaptive_k_is_its_heuristic_spelling():
    assert check(policy="cost").policy == "cost" and check(policy="heuristic").policy == "heuristic"
    assert check(adaptive_k=True).policy == "heuristic"  # older clients' spelling, one name from here on
    for bad in ("fastest", None, ["cost"], 3):
        with pytest.raises(InvalidInput, match="unknown policy"):
            check(policy=bad)
    with pytest.raises(InvalidInput, match="adaptive_k is the heuristic policy"):
        check(policy="cost", adaptive_k=True)


def test_auto_fields_pick_the_best_drafter_the_fields_allow():
    import app
    # Auto is every source the fields allow (the mixed drafter), cross-tokenizer for a foreign draft.
    assert app.auto_fields("qwen-coder-0.5b") == ("mixed", "cost", False)
    assert app.auto_fields("  ") == ("mixed", "cost", False) == app.auto_fields(None)
    assert app.auto_fields("qwen-coder-0.5b", same_tokenizer=False) == ("cross-tokenizer", "cost", False)
    assert app.auto_fields("", same_tokenizer=False) == ("mixed", "cost", False)


def test_auto_picks_cross_tokenizer_for_a_loaded_draft_with_another_tokenizer_and_never_loads():
    import app

    models = {"qwen-coder-1.5b": tiny_tokenizer(), "qwen-coder-0.5b": tiny_tokenizer(),
              "embedded": tiny_tokenizer(shuffle_seed=7)}
    loads = []

    def loader(spec, **kwargs):
        loads.append(spec)
        return Loaded(spec, tiny_model("llama", vocab=128), models[spec], torch.device("cpu"), torch.float32)

    store = ModelStore(max_models=3, loader=loader, hub_probe=lambda: True)
    auto = app.make_handlers(TEST_LIMITS, store, 3.0)[4]
    # Nothing loaded: the tokenizers are unknown, and Auto does not load them to find out.
    assert auto("qwen-coder-1.5b", "embedded")[0] == "mixed"
    assert store.same_tokenizer("qwen-coder-1.5b", "embedded") is None
    assert loads == []
    log = lambda message: None  # noqa: E731
    for spec in models:
        store.model(spec, log)
    assert auto("qwen-coder-1.5b", " embedded ")[:3] == ("cross-tokenizer", "cost", False)
    assert auto("qwen-coder-1.5b", "qwen-coder-0.5b")[:3] == ("mixed", "cost", False)
    assert auto("qwen-coder-1.5b", "")[:3] == ("mixed", "cost", False)
    assert "cross-tokenizer" in auto("qwen-coder-1.5b", " embedded ")[3]  # the line saying why
    assert auto("no such model!", "embedded")[0] == "mixed"  # fields that do not even validate: today's rule
    assert len(loads) == 3
    # A pair built already answers from its own check.
    pair = store.pair("qwen-coder-1.5b", "embedded", log)
    assert pair.tokenizer_mismatch is not None and store.same_tokenizer("qwen-coder-1.5b", "embedded") is False
