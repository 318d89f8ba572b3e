"""Staged drafting (engine/drafters/staged.py): a draft pass that also reads guesses of the draft's
next tokens drafts exactly what one-token passes draft, in fewer passes where the guesses hold; the
guesses come from the context, then token recycling's table; the number of guesses follows the
measured agreement and pass cost; and decoding with it stays exact, greedy and sampled."""
import copy

import pytest
import torch

from chi_square import chi_square, critical, joint
from helpers import perturbed, tiny_model
from specdec.engine.config import Sampling, Speculation
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import ModelDrafter, PromptLookupDrafter
from specdec.engine.drafters.recycling import AdjacencyTable
from specdec.engine.drafters.staged import GuessBudget, Guesser
from specdec.engine.kvcache import CachedModel

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPT = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9, 14]
SAMPLED = Sampling(temperature=0.9, top_k=6, top_p=0.95, seed=3)


class Scripted(Guesser):
    """Guesses from a script of the draft's own tokens: right for the first `right` of each pass's
    guesses, then a token the script does not have there (wrong)."""

    def __init__(self, script: list[int], start: int, right: int, vocab: int):
        super().__init__()
        self.script, self.start, self.right, self.vocab = script, start, right, vocab

    def guess(self, ids, m):
        at = len(ids) - self.start
        true = self.script[at: at + m]
        return [t if i < self.right else (t + 1) % self.vocab for i, t in enumerate(true)]


def counted(model):
    """The model, with a counter of its forward passes."""
    calls = []
    model.register_forward_hook(lambda *args: calls.append(1))
    return calls


def propose(model, vocab, sampling, guesser=None, max_guesses=6, k=8, ids=PROMPT):
    drafter = ModelDrafter(model, vocab, guesser=guesser, max_guesses=max_guesses)
    generator = torch.Generator().manual_seed(sampling.seed)
    return drafter.propose(list(ids), k, sampling, generator)


@pytest.mark.parametrize("sampling", [Sampling(), SAMPLED], ids=["greedy", "sampled"])
def test_staged_passes_draft_what_one_token_passes_draft(sampling):
    draft = tiny_model("llama", seed=3)
    calls = counted(draft)
    one = propose(draft, draft.vocab_size, sampling, max_guesses=0)
    one_passes = len(calls)
    assert one_passes == 8
    for right in (6, 2, 0):  # guesses all right, right for two tokens a pass, all wrong
        calls.clear()
        staged = propose(draft, draft.vocab_size, sampling, Scripted(one.tokens, len(PROMPT), right, draft.vocab_size))
        assert staged.tokens == one.tokens, right
        rows = (staged.logits, one.logits) if sampling.greedy else (staged.q, one.q)
        assert torch.allclose(*rows, atol=1e-4), right
        assert staged.confidences == pytest.approx(one.confidences, abs=1e-4)
        if right == 6:  # one-token passes time both widths first (GuessBudget), then the guesses carry the rest
            assert len(calls) == 3
        else:
            assert len(calls) <= one_passes


def test_a_sliding_window_draft_reads_one_token_a_pass():
    from test_robustness import sliding_model
    drafter = ModelDrafter(sliding_model(seed=9), 96, guesser=Scripted([], 0, 0, 96))
    assert drafter.max_guesses == 0  # its cache cannot roll back to an uncommitted draft token
    assert ModelDrafter(tiny_model("llama"), 96).max_guesses > 0


def test_guesses_come_from_the_context_then_the_table():
    table = AdjacencyTable(96)
    table.rows[14, 0], table.rows[40, 0], table.rows[41, 0] = 40, 41, 42
    guesser = Guesser(PromptLookupDrafter(), table)
    assert guesser.guess([1, 2, 3, 4, 9, 2, 3], 3) == [4, 9, 2]  # the last two tokens occurred before
    # Only the last token occurred before (a one-token match): the table's chain of top candidates.
    assert guesser.guess([7, 14, 8, 3, 14], 3) == [40, 41, 42]
    assert guesser.guess([7, 60, 8, 3, 60], 2) == [8, 3]  # no table row: the one-token match
    assert Guesser().guess([7, 14, 8, 3, 14], 2) == [8, 3]  # no table at all
    assert guesser.guess([7, 61], 3) == [] and guesser.guess([1, 2, 1, 2], 0) == []


def test_the_guess_budget_follows_agreement_and_pass_cost():
    budget = GuessBudget(max_guesses=4, decay=1.0)
    assert budget.choose(room=6) == 0  # a one-token pass is timed first,
    budget.observe(1, [], [7], 0.010)
    assert budget.choose(room=6) == 4  # then the widest (at most max_guesses),
    assert budget.choose(room=2) == 2  # never past the draft's k
    budget.observe(5, [1, 2, 3, 4], [1, 2, 3, 4, 5], 0.014)
    assert budget.choose(room=6) == 4  # guesses that hold are worth a wider pass
    for _ in range(20):
        budget.observe(5, [1, 2, 3, 4], [9], 0.014)  # the first guess always missed
    assert budget.beta(1) < 0.1
    assert budget.choose(room=6) == 0  # 1.1 tokens for 40% more time: one token a pass
    budget.start_request()  # a new text: agreement from the prior again, the device's pass times kept
    # At the prior's 0.5 a position: E(m) = 1, 1.5, 1.75, 1.875, 1.94 in 10, 11, ..., 14 ms: m = 2.
    assert budget.beta(1) == 0.5 and budget.choose(room=6) == 2
    # A pass that read a long catch-up (the prompt) is not a pass of its width.
    budget.observe(40, [], [7], 0.5)
    assert 40 not in budget.seconds


def test_greedy_decoding_with_staged_drafts_is_the_target_s():
    target = tiny_model("qwen2", seed=7)
    draft = perturbed(target, 0.05)
    expected = [e.token for e in standard_decode(CachedModel(target), PROMPT, Sampling(), 40)]
    for right in (6, 1, 0):
        # The guesses: the target's own answer (the draft mostly agrees), right for `right` a pass.
        drafter = ModelDrafter(draft, target.vocab_size, guesser=Scripted(expected, len(PROMPT), right, 96))
        calls = counted(draft)
        rounds = list(speculative_decode(CachedModel(target), drafter, PROMPT, Speculation(k=6), Sampling(), 40))
        assert [t for r in rounds for t in r.tokens] == expected, right
        drafted = sum(len(r.drafted) for r in rounds)
        if right == 6:
            assert len(calls) < drafted  # staged passes really yielded several tokens each


def test_sampling_with_staged_drafts_is_the_target_s():
    """Guesses right most of the time (the draft's own greedy chain) and sometimes not: the first two
    tokens still follow the target's joint distribution, and not the draft's (the power check)."""
    vocab, runs = 8, 1500
    prompt = [3, 5, 7, 3, 5, 6, 4, 3, 5]
    sampling = Sampling(temperature=0.9, top_k=6, top_p=0.95)
    target = tiny_model("llama", seed=21, vocab=vocab, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    greedy_draft = CachedModel(copy.deepcopy(draft))  # its passes are not the drafter's
    calls = counted(draft)

    class DraftGreedy(Guesser):
        def guess(self, ids, m):
            chain = list(ids)
            for _ in range(m):
                chain.append(int(greedy_draft.logits(chain, 1)[0].argmax()))
            return chain[len(ids):]

    drafter = ModelDrafter(draft, vocab, guesser=DraftGreedy(), max_guesses=3)
    lane, counts, drafted = CachedModel(target), torch.zeros(vocab, vocab), 0
    for seed in range(runs):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        drafter.reset()
        # 4 tokens: the first two are counted, and the first round's 3 drafts still run staged passes.
        rounds = list(speculative_decode(lane, drafter, prompt, Speculation(k=4), s, 4))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        drafted += sum(len(r.drafted) for r in rounds)
    assert len(calls) < 0.9 * drafted  # staged passes yielded several draft tokens each
    stat, dof = chi_square(counts, joint(target, sampling, prompt, vocab), runs)
    assert stat < critical(dof), (stat, dof)
    wrong, wrong_dof = chi_square(counts, joint(draft, sampling, prompt, vocab), runs)
    assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"
