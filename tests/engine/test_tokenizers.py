"""A draft must speak the target's token ids: the mismatch error names what differs."""
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from specdec.engine.loaded import TokenizerMismatch, check_tokenizers

WORDS = ["<s>", "</s>", "<unk>", "hello", "world", "the", "cat", "sat"]


def make(words, eos="</s>"):
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token=eos, unk_token="<unk>")


def test_identical_tokenizers_pass():
    check_tokenizers(make(WORDS), make(WORDS))


def test_same_size_but_different_ids_is_caught():
    swapped = WORDS[:3] + ["world", "hello"] + WORDS[5:]
    with pytest.raises(TokenizerMismatch, match=r"different ids: \[\('hello', 3, 4\)"):
        check_tokenizers(make(WORDS), make(swapped))


def test_extra_tokens_are_named():
    with pytest.raises(TokenizerMismatch, match=r"only in draft: \['dog'\]"):
        check_tokenizers(make(WORDS), make(WORDS + ["dog"]))


def test_special_tokens_must_agree():
    with pytest.raises(TokenizerMismatch, match="eos_token differs"):
        check_tokenizers(make(WORDS), make(WORDS, eos="<unk>"))
