"""Helpers shared by the tests (no tests of their own; fixtures live in conftest.py).

Models: small seeded random models built from configs (tiny_model, perturbed), word-level
tokenizers, and a draft that predicts like a target through another tokenizer (translated).
App: tiny model folders with a character-level tokenizer (small folders, fast runs), the app
launched on loopback, a gradio_client, /compare's arguments from playground.fields, a fake spaces."""
from __future__ import annotations

import contextlib
import copy
import json
import random
import socket
import types
from dataclasses import replace
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from specdec.playground.fields import COMPARE_FIELDS, NAMES
from specdec.playground.limits import Limits

ROOT = Path(__file__).resolve().parents[1]


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


VOCAB = 128
SPECIALS = ["<s>", "</s>", "<pad>", "<unk>"]  # ids 0..3; tiny_model uses bos 0, eos 1, pad 2
CHARS = [chr(c) for c in range(32, 127)] + ["\n"] + list("éèàùçöäüßñ¿¡«»°±×÷€£¥§©®µ¶·ÆØÅ")
TEMPLATE = "{% for m in messages %}<s>{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}> {% endif %}"

TEST_LIMITS = Limits(max_prompt_chars=400, max_prompt_tokens=200, max_new_tokens=48, k_max=8,
                     temperature_max=2.0, seed_max=2**31 - 1, allowlist=None, allow_local_paths=True,
                     allow_remote_code=False)


def tiny_tokenizer(shuffle_seed: int | None = None):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = CHARS[: VOCAB - len(SPECIALS)]
    if shuffle_seed is not None:  # same tokens, other ids: a tokenizer that does not fit
        random.Random(shuffle_seed).shuffle(chars)
    vocab = {token: i for i, token in enumerate(SPECIALS + chars)}
    assert len(vocab) == VOCAB
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(SPECIALS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", clean_up_tokenization_spaces=False)
    fast.chat_template = TEMPLATE
    return fast


def save_model(folder: Path, model, tokenizer) -> str:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def make_pair_folders(root: Path) -> dict[str, str]:
    """A target and a close draft (the same tokenizer), saved as model folders."""
    target = tiny_model("llama", seed=0, vocab=VOCAB)
    return {"target": save_model(root / "target", target, tiny_tokenizer()),
            "draft": save_model(root / "draft", perturbed(target, 0.05), tiny_tokenizer())}


def make_folders(root: Path) -> dict[str, str]:
    """target, a close draft (same tokenizer), a draft with a shuffled tokenizer, a model that
    needs remote code, and a folder whose weights are garbage."""
    target = tiny_model("llama", seed=0, vocab=VOCAB)
    folders = {
        "target": save_model(root / "target", target, tiny_tokenizer()),
        "draft": save_model(root / "draft", perturbed(target, 0.05), tiny_tokenizer()),
        "mismatch": save_model(root / "mismatch", tiny_model("llama", seed=5, vocab=VOCAB), tiny_tokenizer(7)),
    }
    remote = root / "remote"
    remote.mkdir()
    (remote / "config.json").write_text(json.dumps({"model_type": "acme", "auto_map": {
        "AutoModelForCausalLM": "modeling_acme.AcmeForCausalLM"}}))
    folders["remote"] = str(remote)
    broken = root / "broken"
    save_model(broken, tiny_model("llama", seed=1, vocab=VOCAB), tiny_tokenizer())
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    folders["broken"] = str(broken)
    return folders


WORDS = ["<s>", "</s>", "<unk>"] + [f"w{i}" for i in range(93)]  # 96 tokens: tiny_model's default vocab


def make_cross_folders(root: Path) -> dict[str, str]:
    """A target with a word tokenizer, and a draft for another tokenizer (the same words at other
    ids, plus words the target lacks) that predicts like the target: a cross-tokenizer pair."""
    target_tokenizer = word_tokenizer(len(WORDS), WORDS)
    draft_tokenizer = word_tokenizer(0, WORDS[:3] + WORDS[:2:-1] + [f"x{i}" for i in range(10)])
    target = tiny_model("llama", seed=0, vocab=len(WORDS))
    return {"word_target": save_model(root / "word-target", target, target_tokenizer),
            "cross": save_model(root / "word-draft", translated(target, target_tokenizer, draft_tokenizer),
                                draft_tokenizer)}


@contextlib.contextmanager
def launched(limits: Limits = TEST_LIMITS, queue_max_size: int | None = None, store=None):
    """The app on 127.0.0.1, yielding (url, store)."""
    import app
    from specdec.playground.store import ModelStore

    store = store or ModelStore(max_models=3, device="cpu")
    demo = app.build_demo(limits=limits, store=store, queue_max_size=queue_max_size, replay_max_seconds=3.0)
    # A port of the OS's choosing: the suite runs in two workers (scripts/test), and gradio's own
    # search from 7860 checks a port free, then binds it, so two apps starting at once could race.
    demo.launch(prevent_thread_lock=True, quiet=True, server_name="127.0.0.1", server_port=free_port(), **app.LAUNCH)
    try:
        yield demo.local_url, store
    finally:
        demo.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it, from its ephemeral range)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def client(url: str):
    from gradio_client import Client

    return Client(url, analytics_enabled=False, verbose=False, download_files=False)


API_ARGS = list(NAMES)  # /compare's arguments, in order, as playground.fields declares them


def args(prompt: str, target: str, draft: str = "", drafter: str = "prompt-lookup", **changes) -> list:
    """/compare's arguments in API order, each at its declared default unless changed; 24 new tokens
    unless changed, so runs stay short."""
    values = {f.name: f.value for f in COMPARE_FIELDS}
    values.update(prompt=prompt, target=target, draft=draft, drafter=drafter, max_new_tokens=24)
    unknown = set(changes) - set(values)
    assert not unknown, f"/compare has no argument {unknown}"
    values.update(changes)
    return [values[name] for name in NAMES]


def with_limits(**changes) -> Limits:
    return replace(TEST_LIMITS, **changes)


def fake_spaces(asked: list) -> types.ModuleType:
    """spaces.GPU as ZeroGPU calls it: duration(*args) first, to size the lease, then the function."""
    spaces = types.ModuleType("spaces")

    def GPU(duration):
        def decorate(fn):
            def wrapper(*args, **kwargs):
                asked.append(duration(*args, **kwargs))
                return fn(*args, **kwargs)
            return wrapper
        return decorate

    spaces.GPU = GPU
    return spaces


def run_stats(**changes):
    """A RunStats of nothing measured yet (k = 4, greedy), with these fields changed."""
    from specdec.engine.run_stats import summarize

    return replace(summarize([], [], k=4), **changes)


def race_result(run=None, **changes):
    """A playground RaceResult around run (default: run_stats()): a finished greedy draft-model race."""
    from specdec.playground.result import LaneTotals, RaceResult

    lane = LaneTotals("", 0, 0.0)
    base = RaceResult(run=run or run_stats(), standard=lane, speculative=lane, drafted=(), accepted=(), greedy=True,
                      target="tiny", draft=None, drafter="draft-model", draft_layers=None, policy="fixed",
                      tree_shape=None, device="cpu", dtype="float32", engine="eager", verify_costs=None,
                      verify_points=(), finished=True)
    return replace(base, **changes)


def chain_round(i: int, drafted: int, accepted: int, confidences=(), draft_s: float = 0.1, verify_s: float = 1.0):
    """A chain round that drafted `drafted` tokens (draft_s each) at these confidences and kept
    `accepted` of them, then a correction (a bonus where it kept them all), its pass taking verify_s."""
    from specdec.engine.events import ACCEPTED, CORRECTED, RoundEvent

    fates = (ACCEPTED,) * accepted + ((CORRECTED,) if accepted < drafted else ())
    return RoundEvent(i, drafted, tuple(range(drafted)), accepted, tuple(range(accepted + 1)), fates, draft_s * drafted,
                      verify_s, (), False, catch_up=1, confidences=confidences)


def tree_round(i: int, tree, source: str):
    """A round that drafted `tree` (events.TreeRound) from `source` and kept its path, then a correction."""
    from specdec.engine.events import ACCEPTED, CORRECTED, RoundEvent

    accepted = len(tree.path)
    return RoundEvent(i, 4, tree.tokens, accepted, tuple(range(accepted + 1)), (ACCEPTED,) * accepted + (CORRECTED,),
                      0.01, 0.1, (), False, source=source, tree=tree)
