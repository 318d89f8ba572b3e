"""Drafts from a model with another tokenizer: the token map, greedy identity, exact sampling."""
import random

import pytest
import torch

from helpers import loaded, perturbed, tiny_model, translated, word_tokenizer
from test_sampling_e2e import chi_square, critical, joint
from specdec.engine.config import Sampling, Speculation
from specdec.engine.decoding import speculative_decode
from specdec.engine.drafters import CrossTokenizerDrafter
from specdec.engine.drafters.vocab import TokenMap, _byte_level_decoder, _bytes
from specdec.engine.kvcache import CachedModel
from specdec.engine.loaded import TokenizerMismatch
from specdec.engine.pair import Pair, Request
from specdec.engine.sampling import probs_from_logits
from specdec.engine.verify import residual

SPECIALS = ["<s>", "</s>", "<unk>"]


def vocabularies(n_target: int, shared: int, extra: int, seed: int = 0):
    """Target words w0..; the draft has `shared` of them at shuffled ids, plus `extra` words of its own."""
    words = [f"w{i}" for i in range(n_target - 3)]
    mixed = list(words)
    random.Random(seed).shuffle(mixed)
    draft_words = mixed[:shared] + [f"x{i}" for i in range(extra)]
    random.Random(seed + 1).shuffle(draft_words)
    return word_tokenizer(0, SPECIALS + words), word_tokenizer(0, SPECIALS + draft_words)


def test_token_bytes_match_across_spelling_schemes():
    byte_of = _byte_level_decoder()
    assert _bytes("Ġhello", "byte-level", byte_of) == _bytes("\u2581hello", "sentencepiece", byte_of) == b" hello"
    assert _bytes("Ċ", "byte-level", byte_of) == _bytes("<0x0A>", "sentencepiece", byte_of) == b"\n"
    assert _bytes("Ã©", "byte-level", byte_of) == "é".encode()
    assert _bytes("hello", "plain", byte_of) == b"hello"


def test_token_map_keeps_only_shared_words_and_moves_their_mass():
    target_tok, draft_tok = vocabularies(20, shared=10, extra=5)
    token_map = TokenMap(target_tok, draft_tok, 20, len(draft_tok))
    target_ids, draft_ids = target_tok.get_vocab(), draft_tok.get_vocab()
    for word, d in draft_ids.items():
        expected = target_ids.get(word, -1)
        assert int(token_map.to_target[d]) == expected
    assert token_map.size == 10 + 3  # the shared words and the three specials
    logits = torch.randn(len(draft_tok))
    restricted = token_map.restrict(logits)
    assert torch.isinf(restricted[~token_map.shared]).all() and torch.equal(restricted[token_map.shared],
                                                                              logits[token_map.shared])
    probs = torch.softmax(restricted, -1)
    moved = token_map.to_target_probs(probs)
    assert moved.shape == (20,) and abs(float(moved.sum()) - 1) < 1e-6
    for word, d in draft_ids.items():
        if word in target_ids:
            assert float(moved[target_ids[word]]) == pytest.approx(float(probs[d]))


def test_token_map_refuses_disjoint_vocabularies():
    a = word_tokenizer(0, ["<a>", "<b>", "<c>", "p", "q"])
    b = word_tokenizer(0, ["<s>", "</s>", "<unk>", "r", "t"])
    with pytest.raises(ValueError, match="share no token"):
        TokenMap(a, b, 5, 5)


def test_rejection_sampling_with_an_intersection_draft_is_exact():
    """Enumeration: a draft that can only propose shared tokens (q = 0 elsewhere), accepted with
    min(1, p/q) and corrected from norm(max(p - q, 0)), emits exactly p, mass on target-only tokens included."""
    torch.manual_seed(0)
    p = torch.softmax(torch.randn(6, dtype=torch.float64), -1)
    q = torch.softmax(torch.randn(6, dtype=torch.float64), -1) * torch.tensor([1, 1, 0, 1, 0, 1.0], dtype=torch.float64)
    q = q / q.sum()
    out = torch.zeros(6, dtype=torch.float64)
    for x in range(6):
        keep = min(1.0, float(p[x] / q[x])) if q[x] > 0 else 0.0
        out[x] += q[x] * keep
        out += q[x] * (1 - keep) * residual(p, q)
    torch.testing.assert_close(out, p)


def cross_pair(draft_model, target_model, target_tok, draft_tok):
    return Pair(loaded(target_model, target_tok), loaded(draft_model, draft_tok, "draft"))


@pytest.mark.parametrize("shared,extra", [(93, 0), (60, 20), (30, 40)])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_greedy_cross_tokenizer_is_token_identical(shared, extra, k):
    target_tok, draft_tok = vocabularies(96, shared, extra)
    target = tiny_model("llama", seed=0)
    for draft in (translated(target, target_tok, draft_tok), translated(perturbed(target, 0.6), target_tok, draft_tok)):
        pair = cross_pair(draft, target, target_tok, draft_tok)
        request = Request("w5 w6 w7 w8 w5 w6", 40, Sampling(), Speculation(k=k), "cross-tokenizer", raw=True)
        standard = [e.token for e in pair.standard(request)]
        rounds = list(pair.speculative(request))
        assert [t for r in rounds for t in r.tokens] == standard


def test_a_draft_that_predicts_like_the_target_is_always_accepted():
    """Every word shared, ids shuffled: the translated draft guesses the target's own tokens, so
    alpha = 1 is known, greedy and sampled; this checks the re-tokenization and the id map."""
    target_tok, draft_tok = vocabularies(96, 93, 0)
    target = tiny_model("llama", seed=0)
    pair = cross_pair(translated(target, target_tok, draft_tok), target, target_tok, draft_tok)
    for sampling in (Sampling(), Sampling(temperature=1.0, seed=4)):
        rounds = list(pair.speculative(Request("w5 w6 w7", 30, sampling, Speculation(k=3), "cross-tokenizer", raw=True)))
        assert all(r.accepted == len(r.drafted) == r.k for r in rounds[:-1])
        # all accepted: the last draft (never fed) and the bonus token are all the draft reads anew
    assert all(r.catch_up == 2 for r in rounds[1:])


def test_a_cross_tokenizer_draft_ends_at_its_own_eos():
    """The draft stops writing at its own EOS (nothing after one could be kept): greedy, its text
    ends before it; sampled, the drawn EOS is the draft's last token."""
    target_tok, draft_tok = vocabularies(96, 93, 0)
    target = tiny_model("llama", seed=0)
    draft = translated(target, target_tok, draft_tok)
    ids = target_tok.encode("w5 w6 w7 w8 w5 w6", add_special_tokens=False)

    def proposal(eos_ids, sampling=Sampling(), seed=0):
        drafter = CrossTokenizerDrafter(draft, target_tok, draft_tok, 96, eos_ids)
        return drafter.propose(ids, 6, sampling, torch.Generator().manual_seed(seed)).tokens

    whole = proposal(frozenset())
    assert len(whole) >= 3
    word = target_tok.convert_ids_to_tokens(whole[2])  # the draft's EOS is made the word it writes third
    ending = proposal(frozenset({draft_tok.convert_tokens_to_ids(word)}))
    assert ending == whole[: whole.index(whole[2])]
    eos_ids = frozenset({draft_tok.convert_tokens_to_ids(word)})
    drawn = [tokens for tokens in (proposal(eos_ids, Sampling(temperature=1.0), seed) for seed in range(120))
             if whole[2] in tokens]
    assert len(drawn) > 3 and all(tokens.index(whole[2]) == len(tokens) - 1 for tokens in drawn)


def test_pair_takes_a_draft_with_another_tokenizer_and_says_which_drafter_needs_it():
    target_tok, draft_tok = vocabularies(96, 60, 20)
    target = tiny_model("llama", seed=0)
    pair = cross_pair(translated(target, target_tok, draft_tok), target, target_tok, draft_tok)
    assert pair.tokenizer_mismatch is not None
    assert pair.auto(Request("w1")).drafter == "cross-tokenizer"
    for drafter in ("draft-model", "hybrid"):
        with pytest.raises(TokenizerMismatch, match="use the cross-tokenizer drafter"):
            pair.speculative(Request("w5 w6", 5, drafter=drafter, raw=True))


VOCAB, RUNS = 8, 2000
PROMPT = "w0 w1 w2 w3 w0"


@pytest.mark.parametrize("sampling", [Sampling(temperature=1.0), Sampling(temperature=0.8, top_k=6, top_p=0.9)])
def test_cross_tokenizer_sampling_matches_target(sampling):
    """Seeded chi-square on the first two tokens: the draft has other ids, one word the target lacks
    and misses two target words (so target-only tokens must come from the residual)."""
    target_tok = word_tokenizer(0, SPECIALS + ["w0", "w1", "w2", "w3", "w4"])
    draft_tok = word_tokenizer(0, SPECIALS + ["x0", "w3", "w0", "w4"])
    target = tiny_model("llama", seed=21, vocab=VOCAB, hidden=32)
    draft = translated(perturbed(target, 0.5, seed=4), target_tok, draft_tok)
    lane = CachedModel(target)
    drafter = CrossTokenizerDrafter(draft, target_tok, draft_tok, VOCAB)
    prompt = target_tok.encode(PROMPT, add_special_tokens=False)
    counts = torch.zeros(VOCAB, VOCAB)
    accepted = rejected = 0
    for seed in range(RUNS):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        rounds = list(speculative_decode(lane, drafter, prompt, Speculation(k=2), s, 3))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        accepted += sum(r.accepted for r in rounds)
        rejected += sum(r.accepted < len(r.drafted) for r in rounds)
    assert accepted > RUNS // 20 and rejected > RUNS // 20
    stat, dof = chi_square(counts, joint(target, sampling, prompt, VOCAB), RUNS)
    assert stat < critical(dof), (stat, dof)
    # power: the draft's own distribution, moved to the target's ids, is told apart
    wrong = joint_moved(draft, drafter, prompt, sampling)
    wrong_stat, wrong_dof = chi_square(counts, wrong, RUNS)
    assert wrong_stat > critical(wrong_dof)


def joint_moved(draft, drafter, prompt, sampling):
    """What the draft alone would emit (restricted to shared tokens), as target ids: P(y1, y2)."""
    token_map, lane = drafter.map, CachedModel(draft)
    context = drafter._encode_draft(drafter._decode_target(prompt))
    step = lambda ids: token_map.to_target_probs(  # noqa: E731
        probs_from_logits(token_map.restrict(lane.logits(ids, 1)[0]), sampling)).double()
    first = step(context)
    rows = []
    for y in range(VOCAB):
        back = [d for d in range(len(token_map.to_target)) if int(token_map.to_target[d]) == y]
        rows.append(first[y] * step(context + back[:1]) if back else torch.zeros(VOCAB, dtype=torch.float64))
    return torch.stack(rows) + 1e-12


# --- issue #24: work that grew with the context or with every request ------------------------------


def test_the_token_map_is_built_once_per_pair_of_tokenizers(monkeypatch):
    from specdec.engine.drafters import vocab

    target_tok, draft_tok = vocabularies(96, 60, 20)
    target = tiny_model("llama", seed=0)
    pair = cross_pair(translated(target, target_tok, draft_tok), target, target_tok, draft_tok)
    built = []
    monkeypatch.setattr(vocab, "TokenMap", lambda *a: built.append(a) or TokenMap(*a))
    request = Request("w5 w6 w7", 8, Sampling(), Speculation(k=2), "cross-tokenizer", raw=True)
    for _ in range(3):
        list(pair.speculative(request))
    assert len(built) <= 1  # one build (none if an earlier test of this pair of tokenizers built it)
    maps = {id(vocab.token_map(target_tok, draft_tok, 96, len(draft_tok))) for _ in range(2)}
    assert len(maps) == 1


def test_the_decoder_scheme_is_read_off_the_backend_not_its_json(monkeypatch):
    from specdec.engine.drafters import vocab

    tokenizer = word_tokenizer(20)
    backend = type(tokenizer.backend_tokenizer)
    monkeypatch.setattr(backend, "to_str", lambda *a, **k: pytest.fail("serialised the whole tokenizer"), raising=False)
    assert vocab._scheme(tokenizer) == "plain" and vocab.token_keys(tokenizer)[5] == ("text", b"w2")


@pytest.mark.parametrize("context", [200, 2000])
def test_per_round_re_tokenizing_does_not_grow_with_the_context(context, monkeypatch):
    """The committed text is re-tokenized for the draft incrementally: the characters encoded and
    decoded per round are the same at 200 and at 2,000 tokens of context; the draft's ids are those
    a full re-encode gives."""
    target_tok, draft_tok = vocabularies(96, 93, 0)
    drafter = CrossTokenizerDrafter(tiny_model("llama", seed=0), target_tok, draft_tok, 96)
    ids = [3 + (i * 7) % 90 for i in range(context)]
    drafter._context(ids)  # the first round reads everything
    work = []
    for method in ("_encode_draft", "_decode_draft", "_decode_target"):
        original = getattr(drafter, method)
        monkeypatch.setattr(drafter, method, lambda x, original=original: work.append(len(x)) or original(x))
    for round_ in range(5):
        ids = ids + [3 + (round_ * 11 + j) % 90 for j in range(3)]
        assert drafter._context(ids) == draft_tok.encode(target_tok.decode(ids), add_special_tokens=False)
    assert sum(work) / 5 < 200  # bounded by the lookbehind and the 3 new tokens, never the context


def test_a_draft_stopping_inside_a_word_holds_that_word_back():
    """' don' of ' done': the target spells the whole word as one token, so offering its first piece
    would be rejected there; a finished word is offered, and so is a lone piece."""
    from specdec.engine.drafters.cross import LAST_WORD

    target_tok = word_tokenizer(0, SPECIALS + ["a", "don", "done", "xyz"])
    draft_tok = word_tokenizer(0, SPECIALS + ["a", "don", "e", "xyz"])
    drafter = CrossTokenizerDrafter(tiny_model("llama", seed=0, vocab=7), target_tok, draft_tok, 7)
    assert drafter.map.extends("don") and not drafter.map.extends("done") and not drafter.map.extends("xyz")
    assert LAST_WORD.search(" it is don").group() == " don"
    a, don, xyz = (draft_tok.convert_tokens_to_ids(w) for w in ("a", "don", "xyz"))
    assert drafter._offered_text([], [a, don]).strip() == "a"
    assert drafter._offered_text([], [a, xyz]).strip() == "a xyz"
    assert drafter._offered_text([], [don]).strip() == "don"


def test_a_draft_with_a_shorter_context_drafts_what_fits_then_stops():
    """The pair's context check counts target tokens, but the draft reads the text in its own (a
    finer tokenizer's are more): a draft with learned positions (GPT-2's n_positions) ran past them
    and crashed with an IndexError. It now drafts only what fits, and nothing once the text fills
    its positions: those rounds are plain, and the output is the target's whatever it drafts."""
    from transformers import GPT2Config, GPT2LMHeadModel

    target_tok, draft_tok = vocabularies(96, 93, 0)
    torch.manual_seed(0)
    draft = GPT2LMHeadModel(GPT2Config(vocab_size=len(draft_tok), n_positions=12, n_embd=32, n_layer=1, n_head=2,
                                       bos_token_id=0, eos_token_id=1)).eval()
    drafter = CrossTokenizerDrafter(draft, target_tok, draft_tok, 96)
    generator = torch.Generator().manual_seed(0)
    for sampling in (Sampling(), Sampling(temperature=1.0, seed=3)):
        for words, most in ((6, 4), (10, 2), (12, 0), (20, 0)):  # the draft reads `words` tokens; 12 fit
            drafter.reset()
            ids = target_tok(" ".join(f"w{5 + i % 7}" for i in range(words)), add_special_tokens=False)["input_ids"]
            proposal = drafter.propose(ids, 4, sampling, generator)
            assert len(proposal.tokens) <= most, (words, proposal.tokens)
