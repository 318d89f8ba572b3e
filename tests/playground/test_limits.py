"""playground.limits and playground.fields without a server: every input check names its input and
limit, junk of any type is refused, the self drafter's layers, ZeroGPU's duration, the policy's
one name and the Auto fields."""
from __future__ import annotations

import json
import math
import re
import sys

import gradio as gr
import pytest
import torch

from helpers import TEST_LIMITS, fake_spaces, tiny_tokenizer, with_limits
from helpers import tiny_model

import space_config
from specdec.playground import render
from specdec.playground.limits import InvalidInput, check_prompt_tokens, check_request
from specdec.engine.loaded import Loaded
from specdec.playground.store import ModelStore
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
    assert app._draft_layers(check(drafter="self"), pair) == (0,)
    Target.model = torch.nn.Linear(2, 2)  # no decoder layers anywhere
    with pytest.raises(InvalidInput, match="the self drafter cannot draft with embedded: Linear keeps no decoder layer list"):
        app._draft_layers(check(drafter="self"), pair)


def test_layer_ranges_are_written_as_the_field_takes_them():
    from specdec.engine.drafters.layers import parse_layers

    for layers in [(0,), (0, 1, 2, 3), (0, 1, 2, 3, 9, 11, 12), (1, 3, 5), (0, 2, 3, 4, 7)]:
        text = render.layer_ranges(layers)
        assert parse_layers(text, 16) == layers
    assert render.layer_ranges((0, 1, 2, 3, 9, 11, 12)) == "0-3,9,11-12"
    assert render.drafter_label("self", (0, 1, 2)) == "self · layers 0-2"
    assert render.drafter_label("hybrid", None) == "hybrid"


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
