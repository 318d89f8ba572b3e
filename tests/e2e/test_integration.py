"""The real embedded SmolLM2-135M-Instruct: exactness, text and the CLI, end to end."""
import json
import subprocess
import sys

import pytest

from specdec import Pair, Request, Sampling, Speculation, load_model
from specdec.engine.text import Detokenizer

pytestmark = pytest.mark.integration

PROMPTS = [
    "Write a Python function that returns the n-th Fibonacci number.",
    "Repeat this list exactly: apples, pears, plums, apples, pears, plums.",
    "Explain in two sentences what a KV cache is.",
]


@pytest.fixture(scope="module")
def embedded():
    return load_model("embedded", device="cpu")


@pytest.fixture(scope="module")
def standard_answers():
    """Each prompt's greedy standard answer, decoded once for all drafters."""
    return {}


@pytest.mark.parametrize("drafter,k", [("prompt-lookup", 3), ("prompt-lookup", 8), ("draft-model", 5),
                                       ("lookup-tree", 4), ("draft-tree", 4)])
def test_greedy_speculative_is_token_identical(embedded, drafter, k, standard_answers):
    # draft-model uses the target as its own draft: every token is accepted, the full-round path.
    model_drafts = drafter in ("draft-model", "draft-tree")
    pair = Pair(embedded, embedded if model_drafts else None)
    for prompt in PROMPTS[: 2 if model_drafts else 3]:
        request = Request(prompt, max_new_tokens=40, spec=Speculation(k=k), drafter=drafter)
        ids = pair.prompt_ids(request)
        if prompt not in standard_answers:  # greedy standard decoding depends on the prompt alone
            standard_answers[prompt] = [e.token for e in pair.standard(request, ids)]
        standard = standard_answers[prompt]
        rounds = list(pair.speculative(request, ids))
        assert [t for r in rounds for t in r.tokens] == standard
        if drafter == "draft-model":
            assert all(r.accepted == len(r.drafted) for r in rounds)
        if drafter == "draft-tree":  # its own draft: a path reaches the full depth in most rounds
            assert sum(r.accepted == r.k for r in rounds) > len(rounds) // 2


def test_chat_answer_stops_at_im_end(embedded):
    pair = Pair(embedded)
    request = Request("Reply with the single word: yes", max_new_tokens=60, drafter="prompt-lookup")
    rounds = list(pair.speculative(request))
    tokens = [t for r in rounds for t in r.tokens]
    im_end = embedded.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end in embedded.eos_ids
    assert tokens[-1] == im_end and len(tokens) < 60


def test_sampled_runs_are_seeded(embedded):
    pair = Pair(embedded)
    make = lambda seed: Request(PROMPTS[2], 24, Sampling(temperature=0.9, top_p=0.95, seed=seed),  # noqa: E731
                                drafter="prompt-lookup")
    first = [r.tokens for r in pair.speculative(make(5))]
    assert first == [r.tokens for r in pair.speculative(make(5))]
    assert first != [r.tokens for r in pair.speculative(make(6))]


def test_detokenizer_pieces_rebuild_the_text(embedded):
    tok = embedded.tokenizer
    ids = tok("Café ☕ costs 3€ — naïve résumé 日本語 🙂 done.")["input_ids"]
    detok = Detokenizer(tok)
    assert "".join(detok.add(t) for t in ids) == tok.decode(ids, skip_special_tokens=True)


def test_cli_generate_json():
    out = subprocess.run(
        [sys.executable, "-m", "specdec", "generate", "--target", "embedded", "--drafter", "prompt-lookup",
         "--prompt", PROMPTS[1], "--k", "4", "--max-new-tokens", "24", "--seed", "0", "--json",
         "--turn", "Now the same list in reverse order."],
        capture_output=True, text=True, timeout=300, check=True,
    )
    result = json.loads(out.stdout)
    assert set(result) == {"standard", "speculative", "stats", "speedup_interval", "undecided", "serving", "engine",
                           "verify_costs", "follow_ups"}
    low, high = result["speedup_interval"]
    assert low <= result["stats"]["speedup"] <= high and result["undecided"] == (low <= 1.0 <= high)
    assert result["engine"]["target"] in ("fast", "eager") and result["verify_costs"]["widths"][:3] == [1, 2, 3]
    (second,) = result["follow_ups"]  # asked after the standard lane's first answer, by both lanes
    assert second["stats"]["identical"] is True and second["standard"]["token_ids"]
    for lane in ("standard", "speculative"):
        assert {"token_ids", "text", "seconds", "tokens_per_s"} <= set(result[lane])
    assert result["speculative"]["rounds"] and {"drafted", "accepted"} <= set(result["speculative"]["rounds"][0])
    stats = result["stats"]
    assert {"alpha", "tau", "k", "speedup", "predicted_speedup", "identical"} <= set(stats)
    assert stats["identical"] is True and stats["k"] == 4
    assert result["standard"]["token_ids"] == result["speculative"]["token_ids"]
    assert {"k_per_round", "k_settled", "verdict", "sources"} <= set(stats)
    assert set(stats["k_per_round"]) <= {4, 3, 2, 1, 0}  # fixed k, clipped only by the budget
    serving = result["serving"]  # prompt lookup serves as vLLM's and SGLang's n-gram method, or not at all
    assert serving["vllm"] is None or serving["vllm"]["speculative_config"]["method"] == "ngram"
