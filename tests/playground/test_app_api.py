"""The launched app driven through gradio_client: streaming /compare, its JSON, /replay, /limits,
clear errors for bad input, Stop, load failures and CUDA OOM, all on tiny local models."""
from __future__ import annotations

import json
import time
import urllib.request

import pytest
import torch

from helpers import API_ARGS, args, client, launched, make_folders
from gradio_client.exceptions import AppError

import app
from specdec import Pair, Request, Sampling, Speculation, compare as engine_compare, load_model
from specdec.engine.drafters import DRAFTERS
from specdec.playground.session import Race
from specdec.engine.sources import Source

CLI_STATS_KEYS = {"alpha", "alpha_naive", "alpha_analytic", "tau", "tokens_per_round", "k", "rounds",
                  "rounds_without_draft", "c", "verify_cost", "speedup", "predicted_speedup",
                  "predicted_speedup_with_verify_cost", "position_acceptance"}
GREEDY_KEYS = {"identical", "divergence"}  # greedy runs only: sampled lanes differ by design
PROMPT = "abc abc abc abc abc"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return make_folders(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def server(folders):
    with launched() as (url, store):
        yield url, store


@pytest.fixture()
def api(server):
    return client(server[0])


def final_stats(job) -> dict:
    return job.result()[7]


def test_compare_streams_both_lanes_then_ends_with_plain_json(api, folders):
    job = api.submit(*args(PROMPT, folders["target"], max_new_tokens=32), api_name="/compare")
    updates = list(job)
    result = job.result()
    assert len(result) == 8  # standard, speculative, table, 4 charts, stats JSON
    assert len(updates) >= 2  # streamed, not only returned
    # Every streamed JSON after loading carries both lanes' text so far, each a prefix of the final text.
    final = result[7]
    for update in updates:
        if "speculative" in update[7]:
            for lane in ("standard", "speculative"):
                assert final[lane]["text"].startswith(update[7][lane]["text"])
    stats = result[7]
    assert CLI_STATS_KEYS | GREEDY_KEYS <= stats.keys()
    assert stats["finished"] is True and stats["greedy"] is True
    assert stats["divergence"] is None
    assert len(stats["drafted"]) == len(stats["accepted"]) == stats["rounds"] > 0
    assert all(0 <= a <= d for d, a in zip(stats["drafted"], stats["accepted"]))
    assert stats["identical"] is True
    assert stats["standard"]["text"] == stats["speculative"]["text"] != ""
    json.dumps(stats, allow_nan=False)  # plain JSON: no NaN or infinities
    # Both lanes' HTML carry the text; the speculative one colours it by fate.
    assert 'data-finished="true"' in result[0] and 'data-finished="true"' in result[1]
    assert "tok-" in result[1] and "tok-" not in result[0]
    table = dict((row[0], row[1]) for row in result[2]["data"])
    assert table["outputs identical"] == "yes"
    assert all(result[i]["type"] == "plotly" for i in range(3, 7))


def test_compare_output_is_the_engine_output(api, folders):
    """Interleaving the lanes and streaming them changes nothing in what they generate."""
    result = api.predict(*args(PROMPT, folders["target"], folders["draft"], "draft-model", k=3, temperature=0.9,
                               top_p=0.95, max_new_tokens=24, seed=11), api_name="/compare")
    stats = result[7]
    assert CLI_STATS_KEYS <= stats.keys() and stats["greedy"] is False
    assert GREEDY_KEYS.isdisjoint(stats)  # sampled: no identity to claim
    assert all(row[0] != "outputs identical" for row in result[2]["data"])
    pair = Pair(load_model(folders["target"], "cpu", log=lambda m: None),
                load_model(folders["draft"], "cpu", log=lambda m: None))
    request = Request(PROMPT, 24, Sampling(0.9, 0, 0.95, 11), Speculation(3, k_max=8), "draft-model")
    expected = engine_compare(pair, request, warm_up=False)
    assert stats["standard"]["text"] == expected["standard"]["text"]
    assert stats["speculative"]["text"] == expected["speculative"]["text"]
    assert stats["accepted"] == [r["accepted"] for r in expected["speculative"]["rounds"]]


def test_sampled_runs_are_seeded(api, folders):
    def text(seed):
        stats = api.predict(*args(PROMPT, folders["target"], temperature=1.0, seed=seed), api_name="/compare")[7]
        return stats["speculative"]["text"]

    assert text(5) == text(5)
    assert text(5) != text(6)


@pytest.mark.parametrize("changes, message", [
    ({"prompt": "   "}, "prompt is empty"),
    ({"prompt": "x" * 401}, "the limit is 400"),
    ({"prompt": "abc " * 60}, "max_prompt_tokens = 200"),
    ({"max_new_tokens": 0}, "max_new_tokens must be in [1, 48]"),
    ({"max_new_tokens": 49}, "max_new_tokens must be in [1, 48]"),
    ({"k": 0}, "k must be in [1, 8]"),
    ({"k": 9}, "k must be in [1, 8]"),
    ({"k": 2.5}, "k must be a whole number"),
    ({"temperature": -0.1}, "temperature must be in [0, 2]"),
    ({"temperature": 2.5}, "temperature must be in [0, 2]"),
    ({"temperature": "hot"}, "temperature must be a number"),
    ({"top_p": 0}, "top_p must be in (0, 1]"),
    ({"top_p": 1.5}, "top_p must be in (0, 1]"),
    ({"top_p": -1}, "top_p must be in (0, 1]"),
    ({"seed": -1}, "seed must be in [0, "),
    ({"drafter": "oracle"}, "unknown drafter 'oracle'"),
    ({"target": "no such model!"}, "unknown target model"),
    ({"target": "./no/such/folder"}, "no such model folder or .gguf file"),
    ({"target": "/etc/passwd"}, "no such model folder or .gguf file"),
    ({"drafter": "draft-model", "draft": ""}, "needs a draft model"),
    ({"drafter": "hybrid", "draft": ""}, "the hybrid drafter needs a draft model"),
    ({"policy": "fastest"}, "unknown policy 'fastest'; choose one of fixed, heuristic, cost"),
    ({"policy": "cost", "adaptive_k": True}, "cannot be combined with policy 'cost'"),
])
def test_bad_input_gets_a_clear_error_naming_the_limit(api, folders, changes, message):
    values = dict(zip(API_ARGS, args(PROMPT, folders["target"])))
    values.update(changes)
    with pytest.raises(AppError, match=None) as error:
        api.predict(*values.values(), api_name="/compare")
    assert message in str(error.value)


def raw_compare(url: str, data: list) -> str:
    """POST /compare as any HTTP client can (JSON with NaN, Infinity, 400-digit ints), and read its stream.
    Over raw HTTP Gradio wants every input (only gradio_client fills in the optional last ones), so the
    tree arguments after the documented 12 are sent at their defaults."""
    data = [*data, *[16, 4][max(0, len(data) - 12):]]
    url = url.rstrip("/") + "/gradio_api/call/compare"
    post = urllib.request.Request(url, json.dumps({"data": data}).encode(), {"Content-Type": "application/json"})
    event_id = json.loads(urllib.request.urlopen(post, timeout=30).read())["event_id"]
    return urllib.request.urlopen(f"{url}/{event_id}", timeout=60).read().decode()


def test_nan_sent_as_raw_json_is_refused(server, folders, api):
    """gradio_client cannot even encode NaN; a raw HTTP client can, and gets a clear error."""
    stream = raw_compare(server[0], args(PROMPT, folders["target"], temperature=float("nan")))
    assert "event: error" in stream and "temperature must be a finite number" in stream
    assert api.predict(*args(PROMPT, folders["target"], max_new_tokens=4), api_name="/compare")[7]["finished"]


JUNK_PAYLOADS = [
    ({"k": 10**400}, "k must be in [1, 8]"),
    ({"max_new_tokens": -10**400}, "max_new_tokens must be in [1, 48]"),
    ({"seed": float("inf")}, "seed must be a finite number"),
    ({"drafter": ["prompt-lookup"]}, "unknown drafter"),
    ({"target": {"name": "embedded"}}, "target model must be text"),
    ({"drafter": "draft-model", "draft": [1, 2]}, "draft model must be text"),
    ({"adaptive_k": None}, "adaptive_k must be true or false"),
    ({"prompt": 42}, "prompt must be text"),
    ({"prompt": "ab\ud800c"}, "U+D800 at position 2 is a lone surrogate"),  # JSON's "\ud800": no UTF-8
]


def test_junk_of_any_type_gets_a_clear_error_and_the_server_keeps_serving(server, folders, api):
    for changes, message in JUNK_PAYLOADS:
        values = dict(zip(API_ARGS, args(PROMPT, folders["target"])))
        stream = raw_compare(server[0], list({**values, **changes}.values()))
        assert "event: error" in stream and message in stream, (changes, stream[-300:])
    assert api.predict(*args(PROMPT, folders["target"], max_new_tokens=4), api_name="/compare")[7]["finished"]


@pytest.mark.parametrize("drafter", ["draft-model", "hybrid"])
def test_tokenizer_mismatch_offers_the_cross_tokenizer_drafter(api, folders, drafter):
    with pytest.raises(AppError) as error:
        api.predict(*args(PROMPT, folders["target"], folders["mismatch"], drafter), api_name="/compare")
    message = str(error.value)
    assert "tokenizer does not match" in message and "another tokenizer" in message
    assert "choose the cross-tokenizer drafter (or press Auto" in message
    assert "prompt-lookup, self, lookup-tree, recycling and mixed" in message  # the drafters needing no draft
    # The offer holds: the same pair with the cross-tokenizer drafter runs, greedy output unchanged.
    stats = api.predict(*args(PROMPT, folders["target"], folders["mismatch"], "cross-tokenizer", max_new_tokens=12),
                        api_name="/compare")[7]
    assert stats["finished"] and stats["identical"] is True and stats["drafter"] == "cross-tokenizer"


def test_remote_code_model_is_refused_before_loading(api, folders):
    with pytest.raises(AppError) as error:
        api.predict(*args(PROMPT, folders["remote"]), api_name="/compare")
    assert "trust_remote_code" in str(error.value)


def test_failed_load_keeps_loaded_models_usable(api, folders, server):
    api.predict(*args(PROMPT, folders["target"], max_new_tokens=4), api_name="/compare")
    with pytest.raises(AppError) as error:
        api.predict(*args(PROMPT, folders["broken"]), api_name="/compare")
    assert "could not load model" in str(error.value) and "still loaded" in str(error.value)
    assert folders["target"] in api.predict(api_name="/limits")["loaded"]
    assert api.predict(*args(PROMPT, folders["target"], max_new_tokens=4), api_name="/compare")[7]["finished"]


def test_unreachable_hub_fails_fast_with_a_clear_message(api, server, monkeypatch):
    store = server[1]
    monkeypatch.setattr(store, "_hub_probe", lambda: False)
    started = time.monotonic()
    with pytest.raises(AppError) as error:
        api.predict(*args(PROMPT, "nobody-here/no-such-model"), api_name="/compare")
    assert "Hub is unreachable" in str(error.value) and time.monotonic() - started < 10


def pair_is_free(store, target) -> bool:
    pair = store._pairs[(target, None)]
    return pair._standard_lane.ids == [] and pair._speculative_lane.ids == []


def test_stop_ends_the_run_within_a_round_and_frees_its_memory(api, folders, server, monkeypatch):
    store = server[1]
    api.predict(*args(PROMPT, folders["target"], max_new_tokens=4), api_name="/compare")  # loaded
    step = Race.step

    def slow_step(self):  # a slow device: each step (a token or a round) takes 0.15 s
        time.sleep(0.15)
        return step(self)

    monkeypatch.setattr(Race, "step", slow_step)
    job = api.submit(*args(PROMPT, folders["target"], max_new_tokens=48), api_name="/compare")
    deadline = time.monotonic() + 30
    while len(job.outputs()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pair_is_free(store, folders["target"])  # mid-run: the lanes hold their caches
    stopped_at = time.monotonic()
    job.cancel()
    while not pair_is_free(store, folders["target"]) and time.monotonic() - stopped_at < 10:
        time.sleep(0.02)
    assert pair_is_free(store, folders["target"])
    assert time.monotonic() - stopped_at < 1.5  # one step is 0.15 s
    assert 'data-finished="false"' in job.outputs()[-1][1]  # it did not run to the end
    monkeypatch.setattr(Race, "step", step)
    assert api.predict(*args(PROMPT, folders["target"], max_new_tokens=8), api_name="/compare")[7]["finished"]


def test_cuda_out_of_memory_is_caught_reported_and_the_cache_emptied(api, folders, server, monkeypatch):
    store = server[1]
    api.predict(*args(PROMPT, folders["target"], max_new_tokens=4), api_name="/compare")
    freed = []
    real_free = app.free_device_memory
    monkeypatch.setattr(app, "free_device_memory", lambda: (freed.append(1), real_free()))
    step = Race.step

    def oom_on_third_step(self):
        if len(self.steps) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return step(self)

    monkeypatch.setattr(Race, "step", oom_on_third_step)
    with pytest.raises(AppError) as error:
        api.predict(*args(PROMPT, folders["target"]), api_name="/compare")
    assert "CUDA out of memory" in str(error.value) and "cache emptied" in str(error.value)
    assert freed and pair_is_free(store, folders["target"])
    monkeypatch.setattr(Race, "step", step)
    assert api.predict(*args(PROMPT, folders["target"], max_new_tokens=8), api_name="/compare")[7]["finished"]


def test_replay_plays_the_last_run_back(api, folders):
    stats = api.predict(*args(PROMPT, folders["target"], max_new_tokens=16), api_name="/compare")[7]
    job = api.submit(api_name="/replay")
    frames = list(job)
    standard, speculative = job.result()
    assert len(frames) >= 2
    assert 'data-finished="true"' in standard and 'data-finished="true"' in speculative
    assert f'data-tokens="{stats["speculative"]["tokens"]}"' in speculative


def test_replay_before_any_run_says_so(server):
    with pytest.raises(AppError, match="nothing to replay"):
        client(server[0]).predict(api_name="/replay")


def test_limits_endpoint_lists_limits_drafters_and_presets(api):
    info = api.predict(api_name="/limits")
    assert info["limits"]["max_new_tokens"] == 48 and info["public"] is False
    assert info["drafters"] == DRAFTERS
    assert {"draft-model", "prompt-lookup", "hybrid", "self", "cross-tokenizer"} <= set(info["drafters"])
    assert list(info["policies"]) == ["fixed", "heuristic", "cost"] and "plain" in info["policies"]["cost"]
    assert info["presets"][0]["target"] == "embedded"


def test_compare_fields_are_declared_once_and_the_api_shows_them(api):
    """Issue #19: /compare's arguments, the API page's parameters, /limits' field list and the
    validation's ranges all come from playground.fields."""
    from specdec.playground.fields import COMPARE_FIELDS, NAMES

    parameters = api.view_api(print_info=False, return_format="dict")["named_endpoints"]["/compare"]["parameters"]
    assert [p["parameter_name"] for p in parameters] == list(NAMES) == API_ARGS
    assert [f.required for f in COMPARE_FIELDS] == [True] * 10 + [False] * 5  # older clients send the ten
    listed = {f["name"]: f for f in api.predict(api_name="/limits")["fields"]}
    assert list(listed) == list(NAMES) and listed["k"]["max"] == 8 and listed["max_new_tokens"]["max"] == 48
    assert listed["top_p"]["min_exclusive"] is True and "max" not in listed["drafter"]
    assert listed["tree_budget"]["default"] == 16 and listed["tree_branching"]["default"] == 4  # TreeShape's
    # A required field has no default to report (a client must send it), only the page's initial value.
    assert "default" not in listed["prompt"] and listed["prompt"]["initial"] == "" and listed["k"]["initial"] == 4


def test_a_ten_argument_call_from_before_the_policy_still_works(api, folders):
    """policy is the optional last argument: gradio_client callers written before it get "fixed"."""
    stats = api.predict(*args(PROMPT, folders["target"], max_new_tokens=8)[:10], api_name="/compare")[7]
    assert stats["finished"] and stats["policy"] == "fixed" and set(stats["k_per_round"]) <= {4, 3, 2, 1, 0}
    assert stats["draft_layers"] is None


def test_an_eleven_argument_call_from_before_draft_layers_still_works(api, folders):
    """draft_layers comes after policy: callers written before it keep their policy, and the self
    drafter gets its default layers (the first half: layer 0 of the tiny target's 2)."""
    stats = api.predict(*args(PROMPT, folders["target"], max_new_tokens=8, policy="heuristic")[:11],
                        api_name="/compare")[7]
    assert stats["finished"] and stats["policy"] == "heuristic" and stats["drafter"] == "prompt-lookup"
    stats = api.predict(*args(PROMPT, folders["target"], drafter="self", max_new_tokens=8)[:11],
                        api_name="/compare")[7]
    assert stats["finished"] and stats["drafter"] == "self" and stats["draft_layers"] == [0]


def test_a_twelve_argument_call_sets_the_self_drafters_layers(api, folders):
    twelve = args(PROMPT, folders["target"], drafter="self", max_new_tokens=8, policy="fixed", draft_layers="1")[:12]
    result = api.predict(*twelve, api_name="/compare")
    stats = result[7]
    assert API_ARGS[10:12] == ["policy", "draft_layers"]
    assert stats["finished"] and stats["identical"] is True and stats["draft_layers"] == [1]
    assert "self · layers 1 · k=4" in result[1]  # the speculative lane's title


def test_cost_policy_with_the_hybrid_drafter_reports_why_and_how_to_serve_it(api, folders):
    result = api.predict(*args(PROMPT, folders["target"], folders["draft"], "hybrid", k=3, max_new_tokens=32,
                               policy="cost"), api_name="/compare")
    stats = result[7]
    assert stats["identical"] is True and stats["policy"] == "cost" and stats["drafter"] == "hybrid"
    assert stats["verdict"].startswith(("speculation paid", "speculation did not pay"))
    assert {Source(s).drafter for s in stats["sources"]} <= {"draft-model", "prompt-lookup"} and stats["sources"]
    serving = stats["serving"]
    assert "not on your server" in serving["note"] and "spec_accept_length" in serving["metrics"]["sglang"]
    if serving["vllm"]:
        assert serving["vllm"]["speculative_config"]["num_speculative_tokens"] == serving["k"] >= 1
    rows = {row[0]: row for row in result[2]["data"]}
    assert rows["policy"][1] == "cost" and "did speculation pay?" in rows


def test_repeats_run_the_request_again_and_report_the_median(api, folders):
    """Issue #20: repeats runs the same request one after the other; the verdict is the median of
    the runs' speedups, each listed, with the interval over all of them; beyond the limit, a message."""
    import statistics

    from specdec.playground import render
    from specdec.playground.result import RaceResult

    stats = api.predict(*args(PROMPT, folders["target"], max_new_tokens=12, repeats=3), api_name="/compare")[7]
    assert stats["final"] and stats["repeats"] == 3 and len(stats["speedup_runs"]) == 3
    assert stats["speedup"] == pytest.approx(statistics.median(stats["speedup_runs"]))
    assert stats["verdict"].endswith("the median of 3 runs") and stats["identical"] is True
    low, high = stats["interval"]
    assert low <= stats["speedup"] <= high
    assert "the median of 3 runs" in render.result_card(RaceResult.from_json(stats))
    once = api.predict(*args(PROMPT, folders["target"], max_new_tokens=12), api_name="/compare")[7]
    assert once["repeats"] == 1 and once["speedup_runs"] is None
    with pytest.raises(AppError, match=r"repeats must be in \[1, 5\]"):
        api.predict(*args(PROMPT, folders["target"], repeats=6), api_name="/compare")
