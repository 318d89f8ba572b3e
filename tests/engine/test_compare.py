"""summarize() turns two lanes' events into a typed RunStats (the CLI's "stats" JSON); checked on hand-made events."""
import json

import pytest

from specdec.engine.run_stats import RunStats, summarize
from specdec.engine.events import ACCEPTED, BONUS, CORRECTED, RoundEvent, TokenEvent


def token_events(tokens, seconds):
    return [TokenEvent(i, t, s, i == len(tokens) - 1) for i, (t, s) in enumerate(zip(tokens, seconds))]


def round_event(i, drafted, accepted, tokens, draft_s, verify_s):
    fates = (ACCEPTED,) * accepted + ((BONUS,) if accepted == len(drafted) else (CORRECTED,))
    return RoundEvent(i, len(drafted), tuple(drafted), accepted, tuple(tokens), fates[: len(tokens)],
                      draft_s, verify_s, (0.5,) * len(drafted), False)


def test_summary_by_hand():
    std = token_events([5, 6, 7, 8, 9, 10], [0.5, 0.1, 0.1, 0.1, 0.1, 0.1])  # 1.0 s, step 0.1 s
    rounds = [
        round_event(0, [5, 6], 2, [5, 6, 7], 0.3, 0.4),  # prefill round: left out of c and verify cost
        round_event(1, [8, 1], 1, [8, 9], 0.02, 0.2),
        round_event(2, [10], 1, [10], 0.01, 0.2),  # budget cut the bonus token
    ]
    s = summarize(std, rounds, k=2)
    assert s.identical is True
    assert s.alpha == pytest.approx(4 / 5)  # kept 2 + 1 + 1, one rejection
    assert s.alpha_naive == pytest.approx(4 / 5)
    assert s.alpha_analytic == pytest.approx(0.5)
    # Each round counts with its own draft length: tau(0.8, 2) twice, tau(0.8, 1) for the clipped one.
    tau2, tau1 = 1 + 0.8 + 0.64, 1 + 0.8
    assert s.tau == pytest.approx((2 * tau2 + tau1) / 3)
    assert s.rounds_without_draft == 0
    assert s.tokens_per_round == pytest.approx(6 / 3)
    assert s.c == pytest.approx((0.03 / 3) / 0.1)
    assert s.verify_cost == pytest.approx(2.0)
    assert s.speedup == pytest.approx((6 / 1.13) / (6 / 1.0))
    assert s.predicted_speedup == pytest.approx((2 * tau2 + tau1) / (2 * (2 * 0.1 + 1) + (0.1 + 1)))
    assert s.predicted_speedup_with_verify_cost == pytest.approx(
        (2 * tau2 + tau1) / (2 * (2 * 0.1 + 2.0) + (0.1 + 2.0)))
    assert s.position_acceptance == pytest.approx((1.0, 0.5))
    json.dumps(s.to_json(), allow_nan=False)  # plain JSON


def test_summary_when_nothing_was_drafted():
    std = token_events([5, 6], [0.2, 0.1])
    rounds = [round_event(0, [], 0, [5], 0.0, 0.2), round_event(1, [], 0, [7], 0.0, 0.1)]
    s = summarize(std, rounds, k=4)
    assert s.alpha is None and s.tau is None and s.predicted_speedup is None and s.c is None
    assert s.identical is False and s.rounds_without_draft == 2 and s.verify_cost is None


def test_draft_cost_falls_back_to_round_0_never_to_a_free_draft():
    # Only round 0 drafted (the policy then chose plain steps): c is round 0's, prefill and all, and the
    # prediction charges it; before, c read None and the prediction priced the draft at 0.
    std = token_events([5, 6, 7, 8], [0.5, 0.1, 0.1, 0.1])
    rounds = [round_event(0, [5, 6], 2, [5, 6, 7], 0.3, 0.4), round_event(1, [], 0, [8], 0.0, 0.1)]
    s = summarize(std, rounds, k=2)
    assert s.c == pytest.approx((0.3 / 2) / 0.1)
    tau2 = 1 + s.alpha + s.alpha**2
    assert s.predicted_speedup == pytest.approx((tau2 + 1) / (2 * 1.5 + 1 + 1))


def test_identical_is_reported_for_greedy_runs_only():
    std = token_events([5, 6], [0.2, 0.1])
    rounds = [round_event(0, [5], 1, [5, 6], 0.1, 0.2)]
    assert summarize(std, rounds, k=1).identical is True
    assert summarize(std, rounds, k=1, greedy=False).identical is None
    assert "identical" not in summarize(std, rounds, k=1, greedy=False).to_json()


def test_adaptive_rounds_get_a_prediction_from_their_own_lengths():
    std = token_events(list(range(5, 17)), [0.1] * 12)
    rounds = [round_event(0, [5], 1, [5, 6], 0.1, 0.2), round_event(1, [7, 8, 9], 3, [7, 8, 9, 10], 0.1, 0.2),
              round_event(2, list(range(11, 16)), 5, list(range(11, 17)), 0.1, 0.2)]
    s = summarize(std, rounds, k=1)
    assert s.alpha == 1.0 and s.tau == pytest.approx(s.tokens_per_round) == pytest.approx(12 / 3)
    json.dumps(s.to_json(), allow_nan=False)


def test_context_overflow_is_refused_before_any_model_work():
    import torch
    from transformers import PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models, pre_tokenizers

    from helpers import tiny_model
    from specdec import Pair, Request
    from specdec.engine.loaded import Loaded

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["<s>", "</s>", "<unk>", "a", "b"])},
                                         unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="</s>", unk_token="<unk>")
    model = tiny_model("llama")  # max_position_embeddings = 512
    pair = Pair(Loaded("tiny", model, tok, torch.device("cpu"), torch.float32))
    assert len(pair.prompt_ids(Request("a b a b", max_new_tokens=100, raw=True))) == 4
    with pytest.raises(ValueError, match="exceeds the model's context of 512 tokens"):
        pair.prompt_ids(Request("a b " * 200, max_new_tokens=200, raw=True))
    with pytest.raises(ValueError, match="empty"):
        pair.prompt_ids(Request("", raw=True))


def test_a_divergence_is_typed_and_its_json_keeps_its_shape():
    """Issue #19: the divergence is one typed value, put into words in one place (CLI and app)."""
    from specdec.engine.run_stats import verdict_answer
    from specdec.engine.verdicts import Divergence

    data = {"index": 3, "standard_token": 5, "speculative_token": None, "margin": 0.5, "tolerance": 0.01,
            "dtype": "float32", "numerical_tie": False, "top2": [5, 7]}
    divergence = Divergence.from_json(data)
    assert divergence.to_json() == data and divergence.speculative_token is None
    assert divergence.describe().startswith("diverged at token 3 (top-2 logit margin 0.5 > tolerance 0.01")
    assert verdict_answer(None) == "not measured yet" and verdict_answer(1.01) == "speculation paid"
    assert verdict_answer(1.0) == "speculation did not pay"


def test_run_stats_are_typed_and_their_json_keeps_its_shape():
    """Issue #19: one frozen RunStats read by attribute; to_json is the CLI's "stats" object and
    from_json reads it back (the browser's copy), the verdict put into words in one place."""
    import dataclasses

    from specdec.engine.verdicts import Divergence

    std = token_events([5, 6, 7, 8, 9, 10], [0.5, 0.1, 0.1, 0.1, 0.1, 0.1])
    rounds = [round_event(0, [5, 6], 2, [5, 6, 7], 0.3, 0.4), round_event(1, [8, 1], 1, [8, 9], 0.02, 0.2),
              round_event(2, [10], 1, [10], 0.01, 0.2)]
    s = summarize(std, rounds, k=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.alpha = 1.0
    data = s.to_json()
    assert {"alpha", "tau", "k", "speedup", "predicted_speedup", "k_per_round", "k_settled", "verdict", "sources",
            "identical", "tree", "position_acceptance"} <= set(data)
    assert "divergence" not in data  # not compared yet: the CLI compares finished greedy lanes
    assert data["verdict"] == str(s.verdict) and data["verdict"].startswith("speculation did not pay: 0.88x")
    assert "settled on k=1.5, 0 of 3 rounds plain" in data["verdict"]  # the median k of rounds 2 and 3
    short = summarize(std[:3], rounds[:1], k=2)  # one round: its speedup is one pass's timing
    assert str(short.verdict).startswith("too short to tell whether speculation paid (1 round): ")
    assert RunStats.from_json(json.loads(json.dumps(data))) == s
    tie = Divergence(4, 7, 9, 0.01, 0.02, "bfloat16", True, (7, 9))
    compared = s.compared_with(tie)
    assert compared.to_json()["divergence"] == tie.to_json()
    assert RunStats.from_json(compared.to_json()) == compared
    assert s.compared_with(None).to_json()["divergence"] is None


def test_repeats_report_the_median_and_say_so():
    std = token_events([5, 6], [0.2, 0.1])
    runs = [summarize(std, [round_event(0, [5], 1, [5, 6], 0.1, seconds)], k=1) for seconds in (0.05, 0.2, 0.4)]
    median = runs[0].median_of(runs)
    assert median.speedup == runs[1].speedup and median.speedup_runs == tuple(r.speedup for r in runs)
    assert str(median.verdict).endswith("; the median of 3 runs") and median.verdict.runs == 3
    assert runs[0].median_of(runs[:1]) == runs[0]  # one run: nothing to take the median of


def test_a_fixed_k_settles_on_k_though_the_budget_cuts_its_last_round():
    """A draft that is the target keeps every token, so a fixed k = 4 over 11 tokens drafts 4, 4 and
    then nothing: one token was left, which no policy can draft for. The run settled on k = 4 and
    drafted every round it had room to; over 12 tokens the last round drafts the 1 the budget leaves."""
    from helpers import tiny_model
    from specdec.engine.config import Sampling, Speculation
    from specdec.engine.decoding import speculative_decode, standard_decode
    from specdec.engine.drafters import make_drafter
    from specdec.engine.kvcache import CachedModel

    target, prompt = tiny_model("llama", seed=7), [5, 9, 14, 5, 9]
    for new_tokens, ks in ((11, [4, 4, 0]), (12, [4, 4, 1])):
        standard = list(standard_decode(CachedModel(target), prompt, Sampling(), new_tokens))
        rounds = list(speculative_decode(CachedModel(target), make_drafter("draft-model", target, 96), prompt,
                                         Speculation(k=4), Sampling(), new_tokens))
        assert [r.k for r in rounds] == ks and [r.budget_cut for r in rounds] == [False, False, True]
        s = summarize(standard, rounds, k=4)
        assert s.identical and s.k_settled == 4 and s.rounds_without_draft == 0
        assert "settled on k=4, 0 of 3 rounds plain" in str(s.verdict)
    # A round the budget cut to k = 2 that still drafted nothing (no match) had room: it counts.
    cut = RoundEvent(2, 2, (), 0, (7,), ("plain",), 0.0, 0.1, (), True, budget_cut=True)
    assert summarize(standard[:1], [cut], k=4).rounds_without_draft == 1


def test_analytic_acceptance_is_a_probability():
    """sum_x min(p, q) over two equal distributions is 1; fp32 rounding must not report more."""
    import torch

    from specdec.engine.verify import acceptance

    p = torch.full((1, 3), 0.3334)  # sums to 1.0002
    assert acceptance(p, p.clone()).item() == 1.0
