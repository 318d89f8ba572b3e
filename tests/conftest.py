"""Small seeded random models built from configs, shared by the tests."""
from __future__ import annotations

import copy
import os

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: loads the real embedded SmolLM2 model (slower)")
    config.addinivalue_line("markers", "browser: drives the app in headless Chromium")


def tiny_model(arch: str = "llama", seed: int = 0, vocab: int = 96, layers: int = 2, hidden: int = 64):
    """A random causal LM. initializer_range is large so next-token distributions are peaked
    enough that argmax is never a near-tie (greedy comparisons are then well defined)."""
    torch.manual_seed(seed)
    common = dict(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        initializer_range=0.2, tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, pad_token_id=2,
    )
    config = LlamaConfig(**common) if arch == "llama" else Qwen2Config(**common, use_sliding_window=False)
    cls = LlamaForCausalLM if arch == "llama" else Qwen2ForCausalLM
    return cls(config).eval()


def perturbed(model, noise: float, seed: int = 1):
    """A draft that agrees with the target often but not always: the target plus weight noise."""
    torch.manual_seed(seed)
    draft = copy.deepcopy(model)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(noise * p.std() * torch.randn_like(p))
    return draft


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors gain nothing from intra-op threads; on a busy 2-core machine two threads wait on
    each other (a forward of the tiny model measured 270 ms with 2 threads, 2.3 ms with 1). A module
    opts in with pytestmark = pytest.mark.usefixtures("one_thread")."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def llama():
    return tiny_model("llama", seed=0)


@pytest.fixture(scope="session")
def qwen():
    return tiny_model("qwen2", seed=3)


def word_tokenizer(n_words: int, words: list[str] | None = None):
    """A word-level tokenizer: "w7" is one token, so raw prompts map to known ids. words, when given,
    is the whole vocabulary in id order (it must start with <s>, </s>, <unk>)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = words or ["<s>", "</s>", "<unk>"] + [f"w{i}" for i in range(n_words - 3)]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def loaded(model, tokenizer, name="tiny"):
    """A model as the engine takes it, on CPU in fp32."""
    from specdec.engine.loaded import Loaded

    return Loaded(name, model, tokenizer, torch.device("cpu"), torch.float32)


def translated(model, target_tokenizer, draft_tokenizer, seed: int = 2):
    """A draft for another tokenizer that predicts like the target: the target's weights with its
    embedding and LM-head rows moved to the draft's ids of the same words. Words the target lacks get
    random rows. With shared words, its guesses are the target's own, so alpha is known to be high."""
    torch.manual_seed(seed)
    draft = copy.deepcopy(model)
    target_ids, draft_ids = target_tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    size = max(draft_ids.values()) + 1
    embed, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    new_embed = torch.randn(size, embed.shape[1]) * embed.std()
    new_head = torch.randn(size, head.shape[1]) * head.std()
    for word, i in draft_ids.items():
        if word in target_ids:
            new_embed[i], new_head[i] = embed[target_ids[word]], head[target_ids[word]]
    draft.resize_token_embeddings(size)
    with torch.no_grad():
        draft.get_input_embeddings().weight.copy_(new_embed)
        draft.get_output_embeddings().weight.copy_(new_head)
    return draft.eval()
