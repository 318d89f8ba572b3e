"""The serving flags never claim an equivalent a server does not have."""
import pytest

from helpers import run_stats
from specdec.serving import Serving, serving_config


def served(k_settled, sources, drafter, draft_model) -> dict:
    """serving_config on a run that settled on k_settled with these rounds per source, as its JSON
    (which must read back to the same Serving)."""
    serving = serving_config(run_stats(k_settled=k_settled, sources=sources), drafter, draft_model)
    assert Serving.from_json(serving.to_json()) == serving
    return serving.to_json()


@pytest.mark.parametrize("drafter,says", [("self", "need"), ("cross-tokenizer", "need"), ("draft-tree", "chain"),
                                          ("lookup-tree", "chain")])
def test_no_server_flags_for_drafters_servers_lack(drafter, says):
    out = served(4, {drafter: 9}, drafter, "some-draft")
    assert out["vllm"] is None and out["sglang"] is None and says in out["advice"]


def test_a_draft_model_run_still_gets_flags():
    out = served(4, {"draft-model": 9}, "draft-model", "d")
    assert out["vllm"]["speculative_config"] == {"method": "draft_model", "model": "d", "num_speculative_tokens": 4}


def test_a_mixed_run_led_by_a_source_servers_lack_gets_no_flags():
    """auto's mixed drafter led by token recycling: no draft-model flags (there may be no draft at
    all), and the advice names what to serve instead; led by a draft-tree, the draft model's chain."""
    recycled = served(4, {"recycling:16": 9, "prompt-lookup": 2}, "mixed", None)
    assert recycled["vllm"] is None and "recycled" in recycled["advice"]
    # A drafter's tree sizes count together: recycling's 9 rounds over three sizes lead the draft model's 5.
    spread = served(4, {"recycling:16": 3, "recycling:4": 3, "recycling:2": 3, "draft-model": 5}, "mixed", "d")
    assert spread["vllm"] is None and "recycled" in spread["advice"]
    tree = served(4, {"draft-tree:8": 9}, "mixed", "d")
    assert tree["vllm"]["speculative_config"]["method"] == "draft_model"
    lookup = served(3, {"lookup-tree:16": 5}, "mixed", None)
    assert lookup["vllm"]["speculative_config"]["method"] == "ngram"
    assert served(0, {}, "mixed", None)["advice"].startswith("speculation did not pay")
