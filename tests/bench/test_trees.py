"""The tree benchmark's pieces on tiny models: structure and consistency, no timing assertions."""
import pytest

from helpers import loaded, perturbed, tiny_model, word_tokenizer
from specdec.bench import trees
from specdec.bench.grid import Prompt
from specdec.bench.tree_report import report
from specdec.engine.pair import Pair

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: faster on one thread


def test_bushy_trees_fill_breadth_first():
    tree = trees.bushy(6, branching=2)
    assert tree.parents == (-1, -1, 0, 0, 1, 1)
    assert len(trees.bushy(64)) == 64 and max(trees.bushy(64).depth(n) for n in range(64)) == 3


def test_verify_costs_time_every_size():
    costs = trees.verify_costs(tiny_model("llama", seed=0), [3, 4, 5, 6, 7], sizes=(1, 4), repeats=2)
    assert costs["step_seconds"] > 0 and costs["prompt_tokens"] == 5
    assert [r["nodes"] for r in costs["rows"]] == [1, 4]
    assert all(r["chain_steps"] > 0 and r["tree_steps"] > 0 for r in costs["rows"])


@pytest.fixture(scope="module")
def result():
    tok = word_tokenizer(96)
    target = tiny_model("llama", seed=7)
    pair = Pair(loaded(target, tok), loaded(perturbed(target, 0.03), tok))
    prompt = Prompt("p-1", "code", "w5 w6 w7 w8 w9 w5 w6 w7 w10 w5 w6")
    ran = trees.run_prompt(pair, prompt, max_new=12, repeats=1, model_drafts=True, log=lambda m: None)
    return {"setup": "tiny", "target": "t", "draft": "d", "draft_quantize": None, "max_new_tokens": 12, "repeats": 1,
            "torch_threads": 1, "verify_costs": trees.verify_costs(target, [5, 6, 7], sizes=(1, 2), repeats=1),
            "prompts": [ran]}


def test_every_configuration_runs_and_matches_standard(result):
    rows = result["prompts"][0]["rows"]
    assert [r["config"] for r in rows] == [c.name for c in trees.configs(True)]
    assert all(r["identical"] for r in rows)
    for r in rows:
        assert r["budget"] is None or r["nodes_per_round"] <= r["budget"]
        assert 1 <= r["tokens_per_pass"] <= r["k"] + 1


def test_report_quotes_the_runs(result):
    text = report([result])
    rows = result["prompts"][0]["rows"]
    assert "## tiny, eager engine: target t, draft d" in text and "| 2 |" in text  # no "engine": before fast existed
    assert f"{rows[0]['tokens_per_pass']:.2f}" in text and "Mean ratio of tokens per pass" in text
    assert "side by side" not in text  # one engine only


def test_report_sets_the_engines_side_by_side(result):
    """Issue #18: the same setup on both engines, in one table, so the engine's effect reads off."""
    fast = {**result, "engine": "fast"}
    text = report([fast, {**result, "engine": "eager"}])
    table = [line for line in text.split("## The two engines side by side")[1].split("\n## ")[0].splitlines()
             if line.startswith("| tiny")]
    assert [line.split(" | ")[1] for line in table] == ["eager", "fast"]
    best_chain = max(r["speedup"] for r in result["prompts"][0]["rows"] if r["budget"] is None)
    assert all(f"| {best_chain:.2f}x |" in line for line in table)
    assert "## tiny, fast engine" in text and "## tiny, eager engine" in text
    other = {**result, "prompts": [{**result["prompts"][0], "prompt": "p-2"}]}  # the setup on other prompts
    table = report([fast, {**result, "engine": "eager"}, {**other, "engine": "fast"}, {**other, "engine": "eager"}])
    assert table.split("\n## tiny,")[0].count("| tiny |") == 4  # both prompt sets, each on both engines
