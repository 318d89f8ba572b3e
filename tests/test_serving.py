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
