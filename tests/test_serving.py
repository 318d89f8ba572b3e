"""The serving flags never claim an equivalent a server does not have."""
import pytest

from specdec.serving import serving_config


@pytest.mark.parametrize("drafter,says", [("self", "need"), ("cross-tokenizer", "need"), ("draft-tree", "chain"),
                                          ("lookup-tree", "chain")])
def test_no_server_flags_for_drafters_servers_lack(drafter, says):
    out = serving_config({"k_settled": 4, "sources": {drafter: 9}}, drafter, "some-draft")
    assert out["vllm"] is None and out["sglang"] is None and says in out["advice"]


def test_a_draft_model_run_still_gets_flags():
    out = serving_config({"k_settled": 4, "sources": {"draft-model": 9}}, "draft-model", "d")
    assert out["vllm"]["speculative_config"] == {"method": "draft_model", "model": "d", "num_speculative_tokens": 4}


def test_a_mixed_run_led_by_a_source_servers_lack_gets_no_flags():
    """auto's mixed drafter led by token recycling: no draft-model flags (there may be no draft at
    all), and the advice names what to serve instead; led by a draft-tree, the draft model's chain."""
    recycled = serving_config({"k_settled": 4, "sources": {"recycling:16": 9, "prompt-lookup": 2}}, "mixed", None)
    assert recycled["vllm"] is None and "recycled" in recycled["advice"]
    tree = serving_config({"k_settled": 4, "sources": {"draft-tree:8": 9}}, "mixed", "d")
    assert tree["vllm"]["speculative_config"]["method"] == "draft_model"
    lookup = serving_config({"k_settled": 3, "sources": {"lookup-tree:16": 5}}, "mixed", None)
    assert lookup["vllm"]["speculative_config"]["method"] == "ngram"
    assert serving_config({"k_settled": 0, "sources": {}}, "mixed", None)["advice"].startswith("speculation did not pay")
