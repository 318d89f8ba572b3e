"""Architectures the rest of the suite does not build, loaded as a user's would be: a tiny random model
of each saved as a folder with the tests' tokenizer, then `load_model(folder)` on the fast engine.
auto's greedy output must be standard decoding's token for token on every one; where a model's
attention cannot read a tree (a sliding window's cache, ALiBi's 2D mask) a tree drafter must say why
by name, and auto must still run exactly on the chains."""
import pytest
import torch
import transformers as tf

from helpers import VOCAB, perturbed, save_model, tiny_tokenizer
from specdec import Pair, Request, Speculation, load_model
from specdec.engine.kvcache import UnsupportedModel
from specdec.models.fused import FusedProjections
from specdec.models.lean import is_lean

pytestmark = pytest.mark.usefixtures("one_thread")

COMMON = dict(vocab_size=VOCAB, bos_token_id=0, eos_token_id=1, pad_token_id=2, tie_word_embeddings=False,
              initializer_range=0.2)
DECODER = dict(num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=256)


def config(arch: str, hidden: int):
    """(config, model class) of a 2-layer model of the given width."""
    mlp = dict(hidden_size=hidden, intermediate_size=2 * hidden, **DECODER)
    gqa = dict(mlp, num_key_value_heads=2, head_dim=hidden // 4)
    return {
        "gpt2": lambda: (tf.GPT2Config(n_embd=hidden, n_layer=2, n_head=4, n_positions=256), tf.GPT2LMHeadModel),
        "gpt_neox": lambda: (tf.GPTNeoXConfig(**mlp), tf.GPTNeoXForCausalLM),
        "opt": lambda: (tf.OPTConfig(hidden_size=hidden, ffn_dim=2 * hidden, word_embed_proj_dim=hidden, **DECODER),
                        tf.OPTForCausalLM),
        "phi": lambda: (tf.PhiConfig(**mlp), tf.PhiForCausalLM),
        "gemma": lambda: (tf.GemmaConfig(**gqa), tf.GemmaForCausalLM),
        "qwen3": lambda: (tf.Qwen3Config(**gqa), tf.Qwen3ForCausalLM),
        "falcon": lambda: (tf.FalconConfig(hidden_size=hidden, new_decoder_architecture=True, num_kv_heads=2,
                                           **DECODER), tf.FalconForCausalLM),
        "mistral-sliding": lambda: (tf.MistralConfig(**gqa, sliding_window=16), tf.MistralForCausalLM),
        "bloom": lambda: (tf.BloomConfig(hidden_size=hidden, n_layer=2, n_head=4), tf.BloomForCausalLM),
    }[arch]()


def user_pair(root, arch: str, hidden: int) -> Pair:
    """A target and a close draft of one architecture, saved and loaded back from their folders."""
    arch_config, cls = config(arch, hidden)
    for key, value in COMMON.items():
        setattr(arch_config, key, value)
    torch.manual_seed(0)
    target = cls(arch_config).eval()
    folders = [save_model(root / name, model, tiny_tokenizer()) for name, model in
               (("target", target), ("draft", perturbed(target, 0.05)))]
    quiet = lambda message: None  # noqa: E731
    loaded_target = load_model(folders[0], device="cpu", engine="fast", log=quiet)
    return Pair(loaded_target, load_model(folders[1], device="cpu", engine="fast", log=quiet))


PROMPT = "abcabcabc hello hello world abcab"


def greedy_identical(pair: Pair, request: Request) -> None:
    ids = pair.prompt_ids(request)
    standard = [e.token for e in pair.standard(request, ids)]
    assert [t for r in pair.speculative(request, ids) for t in r.tokens] == standard


# 64 wide: every layer too small to pack (the eager kernels); 256 wide: prepacked for oneDNN. Where
# attention has separate q, k and v projections (OPT, Phi, Gemma, Qwen3) the fast engine stacks them
# (models/fused.py); GPT-2, GPT-NeoX and Falcon already multiply them as one. Of these, Qwen3's layers
# also run as one function each (models/lean.py).
@pytest.mark.parametrize("arch,hidden", [("gpt2", 64), ("gpt_neox", 256), ("opt", 64), ("phi", 256),
                                         ("gemma", 64), ("qwen3", 64), ("falcon", 64)])
def test_auto_and_a_draft_tree_are_exact_on_other_architectures(tmp_path, arch, hidden):
    pair = user_pair(tmp_path, arch, hidden)
    stacked = sum(isinstance(m, FusedProjections) for m in pair.target.model.modules())
    assert stacked == (0 if arch in ("gpt2", "gpt_neox", "falcon") else 2 if arch in ("opt", "phi") else 4)
    assert pair.target.engine == ("fast" if hidden == 256 or stacked else "eager")
    assert sum(map(is_lean, pair.target.model.modules())) == (2 if arch == "qwen3" else 0)  # models/lean.py
    request = Request(PROMPT, max_new_tokens=32, spec=Speculation(k=4))
    greedy_identical(pair, pair.auto(request))
    greedy_identical(pair, Request(PROMPT, max_new_tokens=32, spec=Speculation(k=4), drafter="draft-tree"))


@pytest.mark.parametrize("arch,reason", [("mistral-sliding", "sliding window"), ("bloom", "ALiBi")])
def test_a_model_that_cannot_read_a_tree_says_why_and_auto_stays_exact(tmp_path, arch, reason):
    pair = user_pair(tmp_path, arch, 64)
    assert not any(map(is_lean, pair.target.model.modules()))  # a sliding window: transformers' own layers
    request = Request(PROMPT, max_new_tokens=32, spec=Speculation(k=4))
    with pytest.raises(UnsupportedModel, match=reason):
        list(pair.speculative(Request(PROMPT, max_new_tokens=8, spec=Speculation(k=4), drafter="draft-tree")))
    greedy_identical(pair, pair.auto(request))
