"""The self and cross-tokenizer drafters through the launched app's API: the self drafter's layers
(default, explicit, refused with the limit named), a draft with another tokenizer, and their stats."""
from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from helpers import args, client, launched, make_cross_folders, make_folders

from specdec import Pair, Request, Sampling, Speculation, compare as engine_compare, load_model

PROMPT = "abc abc abc abc abc"
WORD_PROMPT = "w5 w9 w5 w9 w5 w9"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {**make_folders(root), **make_cross_folders(root)}


@pytest.fixture(scope="module")
def api(folders):
    with launched() as (url, _):
        yield client(url)


def compare(api, *values, **changes) -> list:
    return api.predict(*args(*values, **changes), api_name="/compare")


@pytest.mark.parametrize("layers, used", [("", [0]), ("0", [0]), (" 1 ", [1])])
def test_self_drafter_greedy_lanes_are_identical(api, folders, layers, used):
    """On the 2-layer tiny target: the default (its first half, layer 0), layer 0 named, and layer 1
    alone (which feeds layer 1 other inputs than the target's, so it keeps its own cache)."""
    result = compare(api, PROMPT, folders["target"], drafter="self", draft_layers=layers, max_new_tokens=24)
    stats = result[7]
    assert stats["finished"] and stats["greedy"] and stats["drafter"] == "self" and stats["draft"] is None
    assert stats["draft_layers"] == used
    assert stats["identical"] is True and stats["divergence"] is None
    assert stats["standard"]["text"] == stats["speculative"]["text"] != ""
    assert sum(stats["drafted"]) > 0 and set(stats["sources"]) == {"self"}
    assert f"Speculative · self · layers {used[0]} · k=4" in result[1]
    rows = {row[0]: row[1:] for row in result[2]["data"]}
    assert rows["drafter"][0] == f"self · layers {used[0]}" and "its layers" in rows["drafter"][1]


def test_self_drafter_output_is_the_engine_output(api, folders):
    stats = compare(api, PROMPT, folders["target"], drafter="self", draft_layers="0", k=3, temperature=0.9,
                    top_p=0.95, seed=4, max_new_tokens=20)[7]
    pair = Pair(load_model(folders["target"], "cpu", log=lambda m: None))
    request = Request(PROMPT, 20, Sampling(0.9, 0, 0.95, 4), Speculation(3, k_max=8), "self", draft_layers=(0,))
    expected = engine_compare(pair, request, warm_up=False)
    assert stats["speculative"]["text"] == expected["speculative"]["text"]
    assert stats["accepted"] == [r["accepted"] for r in expected["speculative"]["rounds"]]


@pytest.mark.parametrize("layers, message", [
    ("a", "draft_layers must be at most 200 characters of digits, commas, dashes and spaces"),
    ("0;1", "draft_layers must be at most 200 characters"),
    ("0-", "cannot read '0-'"),
    ("1,,2", "cannot read ''"),
    ("5-3", "the range 5-3 goes down"),
    ("0," * 101, "at most 200 characters"),
    ("0-99999999999999", "layer 99999999999999 is past the limit of 9999"),
    # Only the loaded target knows its depth: 2 layers here.
    ("0-5", "draft_layers '0-5': layer range '0-5' must run upwards within [0, 1] (the model has 2 layers)"),
    ("7", "layer range '7' must run upwards within [0, 1] (the model has 2 layers)"),
    ("0-1", "a draft from all 2 layers is the target itself; skip at least one layer"),
])
def test_bad_draft_layers_name_the_limit_and_the_server_keeps_serving(api, folders, layers, message):
    with pytest.raises(AppError) as error:
        compare(api, PROMPT, folders["target"], drafter="self", draft_layers=layers)
    assert message in str(error.value)
    assert compare(api, PROMPT, folders["target"], drafter="self", max_new_tokens=4)[7]["finished"]


def test_draft_layers_are_ignored_by_other_drafters(api, folders):
    stats = compare(api, PROMPT, folders["target"], draft_layers="not layers", max_new_tokens=4)[7]
    assert stats["finished"] and stats["drafter"] == "prompt-lookup" and stats["draft_layers"] is None


def test_cross_tokenizer_drafter_on_two_word_tokenizers(api, folders):
    """The draft knows the target's words at other ids (and words the target lacks); it predicts like
    the target, so most drafts are accepted, and greedy output is the target's own."""
    result = compare(api, WORD_PROMPT, folders["word_target"], folders["cross"], "cross-tokenizer", max_new_tokens=24)
    stats = result[7]
    assert stats["finished"] and stats["drafter"] == "cross-tokenizer" and stats["draft"] == folders["cross"]
    assert stats["identical"] is True and stats["standard"]["text"] == stats["speculative"]["text"] != ""
    assert sum(stats["accepted"]) >= sum(stats["drafted"]) // 2 > 0
    assert f"cross-tokenizer ← {folders['cross']}" in result[1]
    pair = Pair(load_model(folders["word_target"], "cpu", log=lambda m: None),
                load_model(folders["cross"], "cpu", log=lambda m: None))
    assert pair.tokenizer_mismatch is not None  # the two really differ
    expected = engine_compare(pair, Request(WORD_PROMPT, 24, Sampling(), Speculation(4, k_max=8), "cross-tokenizer"),
                              warm_up=False)
    assert stats["accepted"] == [r["accepted"] for r in expected["speculative"]["rounds"]]


def test_the_same_draft_with_the_draft_model_drafter_is_offered_cross_tokenizer(api, folders):
    with pytest.raises(AppError) as error:
        compare(api, WORD_PROMPT, folders["word_target"], folders["cross"], "draft-model")
    message = str(error.value)
    assert "vocabularies differ" in message and "choose the cross-tokenizer drafter" in message
    assert compare(api, WORD_PROMPT, folders["word_target"], max_new_tokens=4)[7]["finished"]


def test_auto_says_what_it_set_and_why():
    import app

    with_draft, alone = app.auto_reason("mixed", "qwen-coder-0.5b"), app.auto_reason("mixed", " ")
    assert "every source" in with_draft and "the draft model" in with_draft and "plain decoding" in with_draft
    assert "token recycling" in alone and "draft model" not in alone
    assert "another tokenizer" in app.auto_reason("cross-tokenizer", "embedded")


def test_a_follow_up_is_asked_after_the_last_runs_answer(tmp_path):
    """Issue #21's follow-up box: the next turn is asked after the last run's turn, the standard
    lane's answer as history, both lanes on the same conversation (greedy: identical)."""
    import gradio as gr

    import app
    from helpers import TEST_LIMITS, VOCAB, save_model, tiny_model, tiny_tokenizer
    from specdec.playground.limits import InvalidInput, MAX_TURNS, check_history
    from specdec.playground.store import ModelStore

    target = save_model(tmp_path / "target", tiny_model("llama", seed=0, vocab=VOCAB), tiny_tokenizer())
    handlers = app.make_handlers(TEST_LIMITS, ModelStore(device="cpu"), 3.0)
    compare, follow_up = handlers.compare, handlers.follow_up
    fields = args("hello there", target, max_new_tokens=6)  # all 14, as the page sends them
    first = list(compare(*fields))[-1]
    trace = first[-1]
    assert trace["history"] == [["hello there", first[7]["standard"]["text"]]]
    second = list(follow_up(*fields, "and then?", trace))[-1]
    assert second[7]["finished"] and second[7]["identical"]
    assert second[-1]["history"][:1] == trace["history"] and second[-1]["history"][1][0] == "and then?"
    with pytest.raises(gr.Error, match="nothing to follow up yet"):
        list(follow_up(*fields, "x", None))
    assert check_history(None, TEST_LIMITS) == () and check_history([["a", "b"]], TEST_LIMITS) == (("a", "b"),)
    for bad, message in ((["ab"], "pair of texts"), ([["a", "b"]] * (MAX_TURNS + 1), f"at most {MAX_TURNS}"),
                         ([["a" * 401, "b"]], "the limit is 400 characters")):
        with pytest.raises(InvalidInput, match=message):
            check_history(bad, TEST_LIMITS)
