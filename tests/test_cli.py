"""specdec.cli: --auto is Pair.auto's setup (the same the app's Auto and the bench's auto cells run),
and it drafts with the draft model it is given."""
from __future__ import annotations

import json
import re

import pytest

from helpers import make_pair_folders


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return make_pair_folders(tmp_path_factory.mktemp("cli"))


def run(capsys, *argv) -> dict:
    from specdec import cli

    cli.main(["generate", "--prompt", "abc abc abc abc", "--max-new-tokens", "12", "--json", "--no-warmup",
              "--engine", "eager", *argv])
    return json.loads(capsys.readouterr().out)


def test_auto_drafts_with_the_draft_model_it_is_given(folders, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))  # anything else cached lands here (costs: conftest)
    result = run(capsys, "--target", folders["target"], "--draft", folders["draft"], "--auto")
    assert result["stats"]["identical"] is True and result["stats"]["sources"]
    assert result["engine"]["draft"] is not None  # the draft was loaded: mixed drafts with it where it pays
    alone = run(capsys, "--target", folders["target"], "--auto")
    assert alone["engine"]["draft"] is None and alone["stats"]["identical"] is True


def test_auto_refuses_a_drafter_or_another_policy(folders, capsys):
    with pytest.raises(SystemExit, match="--auto picks the drafter"):
        run(capsys, "--target", folders["target"], "--auto", "--drafter", "prompt-lookup")
    with pytest.raises(SystemExit, match="--auto uses the cost policy"):
        run(capsys, "--target", folders["target"], "--auto", "--policy", "fixed")


def test_a_divergence_is_put_into_words_for_the_terminal():
    from specdec.cli import divergence_note
    from specdec.engine.verdicts import Divergence

    note = divergence_note(Divergence(4, 7, 9, 0.01, 0.05, "bfloat16", True, (7, 9)))
    assert note == (": numerical tie at token 4 (top-2 logit margin 0.01 ≤ tolerance 0.05, bfloat16); "
                    "tokens 7 (standard) and 9 (speculative)")
    assert divergence_note(None) == ""


@pytest.mark.parametrize("argv, message", [
    (["--k", "0"], "k must be an integer in"),
    (["--temperature", "-1"], "temperature must be"),
    (["--seed", "99999999999999999999"], "seed must be an integer in"),
    (["--max-new-tokens", "0"], "max_new_tokens must be an integer >= 1"),
    (["--prompt", "   "], "the prompt is empty"),
    (["--prompt", "abc \udcff"], "lone surrogate"),
    (["--turn", ""], "the prompt is empty"),
    (["--draft-layers", "0-1"], "--draft-layers is for --drafter self"),
])
def test_bad_arguments_are_refused_before_any_model_loads(capsys, monkeypatch, argv, message):
    """A load can take minutes (the fast engine's prepacking); an argument that cannot work is said
    at once, in one line."""
    from specdec import cli

    monkeypatch.setattr(cli, "load_pair", lambda args: pytest.fail("loaded a model for a request that cannot run"))
    with pytest.raises(SystemExit, match=message):
        run(capsys, "--target", "embedded", *argv)


def test_a_name_that_is_no_model_here_is_one_line_at_once_without_the_hub(capsys, monkeypatch):
    """Not an offline name, a folder or a file, so a Hub id; with the Hub unreachable the command says
    so in one line (no traceback, no minute of retries) and names the offline model it resembles."""
    from specdec.models import loading

    monkeypatch.setattr(loading, "hub_reachable", lambda: False)
    monkeypatch.setattr(loading, "cached_on_disk", lambda repo_id: False)
    with pytest.raises(SystemExit, match=r"^error: 'Embeded' is not an offline name .* Did you mean 'embedded'\?$"):
        run(capsys, "--target", "Embeded")


def test_a_run_reports_how_sure_it_is_of_its_speedup(folders, capsys):
    """The verdict's speedup comes with its 90% bootstrap interval (JSON and text); an interval that
    holds 1.0 says the run cannot tell whether speculation paid."""
    from specdec import cli

    result = run(capsys, "--target", folders["target"], "--drafter", "prompt-lookup")
    low, high = result["speedup_interval"]
    assert low <= result["stats"]["speedup"] <= high and low < high
    assert result["undecided"] == (low <= 1.0 <= high)  # the JSON says what the text says of it
    cli.main(["generate", "--prompt", "abc abc abc abc", "--max-new-tokens", "12", "--no-warmup", "--engine", "eager",
              "--target", folders["target"], "--drafter", "prompt-lookup"])
    text = capsys.readouterr().out  # another run: its own interval, which the text must read right
    printed = re.search(r"90% interval of the speedup ([\d.]+)-([\d.]+)x", text)
    assert printed, text
    low, high = float(printed[1]), float(printed[2])
    if min(abs(low - 1.0), abs(high - 1.0)) > 0.005:  # (a bound printed as 1.00 may be either side of it)
        assert ("holds 1.0" in text) == (low <= 1.0 <= high)


def test_search_layers_checks_its_options_before_a_model_loads(tmp_path):
    """A search takes minutes: counts below 1, a verify cost of 0 or less, and an --out whose folder
    is missing are refused by name first (the folder one used to fail after the whole search)."""
    from specdec.cli import main

    base = ["search-layers", "--target", str(tmp_path / "no-such-model"), "--out", str(tmp_path / "l.json")]
    for extra, message in [(["--per-category", "0"], "--per-category must be an integer >= 1, got 0"),
                           (["--min-layers", "0"], "--min-layers must be an integer >= 1, got 0"),
                           (["--verify-steps", "-1"], "--verify-steps must be above 0"),
                           (["--out", str(tmp_path / "none" / "l.json")], "--out .*: no folder")]:
        with pytest.raises(SystemExit, match=message):
            main(base + extra)


def test_a_long_layer_list_is_shown_briefly_and_bracketed_once():
    from specdec.engine.drafters.layers import check_layers

    with pytest.raises(ValueError, match=r"got \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, \.\.\. \(27 entries\)\]$"):
        check_layers(list(range(27)), 24)
