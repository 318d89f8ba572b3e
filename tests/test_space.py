"""README.md's Space front matter agrees with space_config, and every value is one Hugging Face
accepts; public mode and the ZeroGPU shim behave."""
from __future__ import annotations

import inspect
import re
import sys

import pytest
import yaml
from huggingface_hub import SpaceHardware

from helpers import ROOT, fake_spaces

import space_config
from specdec.playground import zerogpu
from specdec.playground.presets import PRESETS

# From the Spaces configuration reference (huggingface.co/docs/hub/spaces-config-reference).
COLOURS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
SDKS = {"gradio", "docker", "static"}
KEYS = {"title", "emoji", "colorFrom", "colorTo", "sdk", "python_version", "sdk_version", "suggested_hardware",
        "suggested_storage", "app_file", "app_port", "base_path", "fullWidth", "header", "short_description",
        "models", "datasets", "tags", "thumbnail", "pinned", "hf_oauth", "hf_oauth_scopes", "disable_embedding",
        "startup_duration_timeout", "custom_headers", "preload_from_hub", "license"}


def readme_front_matter() -> tuple[str, dict]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?\n)---\n", text, re.S)
    assert match, "README.md must start with a --- YAML block ---"
    return match.group(0), yaml.safe_load(match.group(1))


def test_readme_front_matter_is_space_config():
    block, meta = readme_front_matter()
    assert meta == space_config.SPACE
    assert block == space_config.front_matter()  # regenerate with: python space_config.py


def test_front_matter_values_are_ones_hugging_face_accepts():
    meta = space_config.SPACE
    assert set(meta) <= KEYS
    assert meta["sdk"] in SDKS and meta["sdk"] == "gradio"
    assert meta["colorFrom"] in COLOURS and meta["colorTo"] in COLOURS
    assert meta["suggested_hardware"] in {h.value for h in SpaceHardware}
    assert re.fullmatch(r"3\.\d{1,2}(\.\d+)?", meta["python_version"])
    assert len(meta["short_description"]) <= 60
    assert len(meta["emoji"]) == 1 and ord(meta["emoji"]) > 0x2000
    assert (ROOT / meta["app_file"]).is_file() and meta["app_file"] == "app.py"
    assert isinstance(meta["pinned"], bool)
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+", m) for m in meta["models"])


def test_sdk_version_matches_requirements():
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert space_config.SPACE["sdk_version"] == pins["gradio"]
    import gradio

    assert gradio.__version__ == pins["gradio"]


def test_space_lists_every_hub_model_a_preset_uses():
    hub = {m for p in PRESETS for m in (p.target, p.draft) if "/" in m}
    assert set(space_config.SPACE["models"]) == hub and len(hub) >= 6


@pytest.mark.parametrize("environ, public", [
    ({}, False), ({"SPACE_ID": "me/specdec"}, True), ({"SPACE_ID": "me/specdec", "SPECDEC_PUBLIC": "0"}, False),
    ({"SPECDEC_PUBLIC": "1"}, True), ({"SPECDEC_PUBLIC": "true"}, True), ({"SPECDEC_PUBLIC": "off"}, False),
])
def test_public_mode_is_an_environment_switch(environ, public):
    assert space_config.public_mode(environ) is public
    assert space_config.limits(environ) is (space_config.PUBLIC_LIMITS if public else space_config.LOCAL_LIMITS)


def test_public_limits_are_the_stricter_ones():
    local, public = space_config.LOCAL_LIMITS, space_config.PUBLIC_LIMITS
    for field in ("max_prompt_chars", "max_prompt_tokens", "max_new_tokens", "k_max", "temperature_max"):
        assert getattr(public, field) <= getattr(local, field), field
    assert public.allowlist and "embedded" in public.allowlist and not public.allow_local_paths
    assert not public.allow_remote_code and not local.allow_remote_code
    assert space_config.QUEUE_MAX_SIZE >= 1 and space_config.GPU_CONCURRENCY == 1


def test_zerogpu_is_a_no_op_without_spaces(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # import spaces -> ImportError

    def run(x):
        yield x

    assert zerogpu.gpu(lambda *a: 60)(run) is run


def test_zerogpu_asks_for_a_duration_derived_from_the_request(monkeypatch):
    asked = []
    fake = fake_spaces(asked)  # the real decorator calls duration(*args) per call to size the lease
    monkeypatch.setitem(sys.modules, "spaces", fake)
    settings = space_config.ZERO_GPU

    def duration(prompt, max_new_tokens):
        return zerogpu.duration_seconds(max_new_tokens, needs_load=False, settings=settings)

    @zerogpu.gpu(duration)
    def run(prompt, max_new_tokens):
        yield from range(3)

    assert inspect.isgeneratorfunction(run)  # Gradio streams only generator functions
    assert list(run("p", 250)) == [0, 1, 2]
    assert list(run("p", 1)) == [0, 1, 2]
    assert asked == [round(2 * 250 * settings["seconds_per_token"]), settings["min_seconds"]]
    assert list(inspect.signature(run).parameters) == ["prompt", "max_new_tokens"]


def test_zerogpu_duration_is_clipped_and_counts_loading():
    s = {"min_seconds": 20, "max_seconds": 120, "load_seconds": 40, "seconds_per_token": 0.1}
    assert zerogpu.duration_seconds(100, False, s) == 20
    assert zerogpu.duration_seconds(100, True, s) == 60
    assert zerogpu.duration_seconds(10_000, True, s) == 120
    assert zerogpu.duration_seconds("junk", False, s) == 20
