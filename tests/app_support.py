"""Shared by the app tests (no tests of its own): tiny model folders with a real tokenizer, and an
app launched on loopback. A character-level tokenizer keeps the folders small and the runs fast."""
from __future__ import annotations

import contextlib
import json
import random
import sys
import types
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # app.py and space_config.py live at the repo root
    sys.path.insert(0, str(ROOT))

from conftest import perturbed, tiny_model, translated, word_tokenizer  # noqa: E402
from specdec.playground.limits import Limits  # noqa: E402

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
    demo.launch(prevent_thread_lock=True, quiet=True, server_name="127.0.0.1", **app.LAUNCH)
    try:
        yield demo.local_url, store
    finally:
        demo.close()


def client(url: str):
    from gradio_client import Client

    return Client(url, analytics_enabled=False, verbose=False, download_files=False)


API_ARGS = ["prompt", "target", "draft", "drafter", "k", "adaptive", "temperature", "top_p", "max_new_tokens", "seed",
            "policy", "draft_layers"]


def args(prompt: str, target: str, draft: str = "", drafter: str = "prompt-lookup", k=4, adaptive=False,
         temperature=0.0, top_p=1.0, max_new_tokens=24, seed=0, policy="fixed", draft_layers="") -> list:
    """/compare's arguments in their documented order."""
    return [prompt, target, draft, drafter, k, adaptive, temperature, top_p, max_new_tokens, seed, policy,
            draft_layers]


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
