"""Loading target and draft models from a Hub id, a local folder, a GGUF file or an offline name."""
from __future__ import annotations

import difflib
import os
import socket
import time
from pathlib import Path
from typing import Callable

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from ..engine.loaded import Loaded
from .fast import ENGINES, MEMORY_MARGIN, available_memory, can_prepack, check_engine, default_engine, fast_layers, \
    packed_bytes, prepack  # noqa: F401  (ENGINES: the choices, for the CLI and the app)
from .fused import fuse_projections
from .int8 import INT8_SCHEME, OutlierSplitLinear, quantize_int8
from .lean import make_lean
from . import offline
from .offline import ModelUnavailable

Log = Callable[[str], None]


DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def pick_device(name: str | None = None) -> torch.device:
    """CUDA, then MPS, then CPU, unless a device is named."""
    if name:
        try:
            device = torch.device(name)
        except RuntimeError:
            raise ValueError(f"unknown device {name!r}: use cpu, cuda, cuda:N or mps") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {name!r}: this torch ({torch.__version__}) sees no CUDA device")
        if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r}: there are {torch.cuda.device_count()} CUDA devices")
        if device.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError(f"device {name!r}: MPS is not available on this machine")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(device: torch.device, name: str | None = None) -> torch.dtype:
    """bf16 on a GPU, fp32 on CPU (a 2-core AVX2 CPU gains little from bf16), unless named."""
    if name:
        if name not in DTYPES:
            raise ValueError(f"unknown dtype {name!r}; choose one of {sorted(DTYPES)}")
        return DTYPES[name]
    return torch.float32 if device.type == "cpu" else torch.bfloat16


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def resolve(spec: str, log: Log = print) -> str:
    """What from_pretrained should read: an offline name or GGUF file becomes a cached safetensors
    folder (converted once), a folder stays a folder, anything else is taken as a Hub id."""
    folder = offline.resolve_offline(spec, log=log)
    if folder is not None:
        return str(folder)
    path = Path(os.path.expanduser(spec))
    if path.suffix == ".gguf":
        if not path.is_file():
            raise FileNotFoundError(f"GGUF file not found: {path}")
        return str(offline.gguf_to_folder(path, log=log))
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{spec} is a folder with no model in it: no config.json (a model folder is "
                                    "what save_pretrained writes)")
        if not any((path / name).is_file() for name in TOKENIZER_FILES):
            raise FileNotFoundError(f"{spec} has a model but no tokenizer: none of {', '.join(TOKENIZER_FILES)} "
                                    "(save the tokenizer beside it with tokenizer.save_pretrained)")
        return str(path)
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise FileNotFoundError(f"model folder not found: {spec}")
    return spec


HUB_HOST = ("huggingface.co", 443)
HUB_UNREACHABLE = "it is not in the local Hugging Face cache, and the Hub is unreachable from this machine"
_hub_seen: dict[str, float] = {}  # "up"/"down" -> when it was last seen so


def hub_reachable(timeout: float = 3.0, remember: float = 60.0) -> bool:
    """One short TCP connect to the Hub, remembered for a minute. Without it, a Hub id on an offline
    machine costs the loader about a dozen retries (~45 s) before it gives up."""
    now = time.monotonic()
    for state in ("up", "down"):
        if now - _hub_seen.get(state, -remember) < remember:
            return state == "up"
    try:
        socket.create_connection(HUB_HOST, timeout=timeout).close()
        state = "up"
    except OSError:
        state = "down"
    _hub_seen.clear()
    _hub_seen[state] = now
    return state == "up"


def cached_on_disk(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # an unusual id or cache layout: let the loader decide
        return False


def unknown_model(spec: str, error: OSError | str) -> str:
    """The error for a Hub id the Hub could not serve: what specdec loads without the Hub, the
    nearest offline name if the spec looks like a misspelt one, and the Hub's own first line."""
    names = list(offline.OFFLINE_NAMES)
    near = difflib.get_close_matches(spec.lower(), names, n=1, cutoff=0.6)
    hint = f" Did you mean {near[0]!r}?" if near else ""
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return (f"{spec!r} is not an offline name ({', '.join(names)}), a local model folder "
            f"or a .gguf file, so it was taken as a Hugging Face Hub id, and the Hub could not serve it "
            f"({reason}).{hint}")


def load_model(
    spec: str,
    device: torch.device | str | None = None,
    dtype: torch.dtype | str | None = None,
    trust_remote_code: bool = False,
    log: Log = print,
    quantize: str | None = None,
    engine: str | None = None,
) -> Loaded:
    """engine: "fast" (the default on CPU: linear layers prepacked once, see models/fast.py) or
    "eager" (the model as transformers builds it); on a GPU both are eager."""
    device = pick_device(device) if not isinstance(device, torch.device) else device
    dtype = dtype if isinstance(dtype, torch.dtype) else pick_dtype(device, dtype)
    check_quantize(quantize, device)
    check_engine(engine)
    source = resolve(spec, log=log)
    is_hub_id = source == spec and not Path(source).exists()  # not an offline name, a folder or a file
    if is_hub_id and not cached_on_disk(spec) and not hub_reachable():
        raise ModelUnavailable(unknown_model(spec, HUB_UNREACHABLE))
    start = time.perf_counter()
    log(f"loading {spec} ({dtype}, {device})")
    kwargs: dict = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if device.type == "cuda":
        # More than one GPU: let accelerate split the layers across them.
        kwargs["device_map"] = "auto" if torch.cuda.device_count() > 1 else {"": device}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except ValueError as error:
        if "trust_remote_code" in str(error):
            raise ValueError(f"{spec} needs trust_remote_code=True to load; it runs code from the model repo, "
                             "so specdec only does that when asked") from error
        raise
    except OSError as error:
        if not is_hub_id:  # a local model: its own error says what is wrong
            raise
        raise ModelUnavailable(unknown_model(spec, error)) from error
    if device.type != "cuda":
        model = model.to(device)
    model.eval()
    log(f"loaded {spec}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters "
        f"in {time.perf_counter() - start:.1f}s")
    engine = engine or default_engine(device)
    # Before quantizing and prepacking, which then apply to the stacked layers (models/fused.py).
    fused = fuse_projections(model) if engine == "fast" and device.type == "cpu" else 0
    if quantize == "int8":
        model = quantize_int8(model)
        split = sum(isinstance(m, OutlierSplitLinear) for m in model.modules())
        log(f"quantized {spec} to int8 (dynamic, per channel, CPU)"
            + (f"; {split} MLP output projections split around their outlier activations" if split else ""))
    engine = apply_engine(model, engine, device, dtype, spec, log, quantized=bool(quantize), fused=fused)
    # Last, on the layers as they will run: stacked, quantized, prepacked (models/lean.py).
    if engine == "fast" and (lean := make_lean(model)):
        log(f"{spec}: {lean} decoder layers run as one function each (models/lean.py)")
    return Loaded(spec, model, tokenizer, device, dtype, engine, quantize)


def apply_engine(model: torch.nn.Module, engine: str, device: torch.device, dtype: torch.dtype, spec: str,
                 log: Log, quantized: bool = False, fused: int = 0) -> str:
    """The engine the model really runs. "fast" adds prepacked copies of its large linear layers
    where that exists (fp32/bf16 on CPU) and the memory is there (models/fast.py); `fused`, the groups
    of projections load_model has already stacked for it (models/fused.py). Where the fast engine
    does neither, the model is eager, and the log says why."""
    if engine == "eager":
        return "eager"
    stacked = f"{fused} groups of projections that read one input stacked into one layer each" if fused else ""
    extra, available = packed_bytes(model), available_memory()
    if quantized:
        not_packed = "an int8 model runs PyTorch's quantized kernels, which are not prepacked"
    elif not can_prepack(device, dtype):
        not_packed = f"prepacking exists for fp32/bf16 on CPU, not {device} ({dtype})"
    elif not extra:
        not_packed = "no linear layer is large enough to gain from prepacking"
    elif available is not None and extra + MEMORY_MARGIN > available:
        not_packed = (f"prepacking needs {extra / 1e9:.1f} GB more for the packed weights and "
                      f"{available / 1e9:.1f} GB is available")
    else:
        not_packed = ""
    if not_packed:
        log(f"{spec}: {not_packed}; " + (f"engine fast: {stacked}" if fused else "running eager"))
        return "fast" if fused else "eager"
    start = time.perf_counter()
    packed = prepack(model)
    layer = fast_layers(model)[0]
    padded = ", ".join(f"{n} -> {w}" for n, w in enumerate(layer.padded_rows, 1) if w > n and n > layer.dense_rows)
    log(f"{spec}: engine fast, " + (f"{stacked}; " if fused else "")
        + f"{packed} linear layers prepacked for oneDNN (+{extra / 1e9:.2f} GB) in "
        f"{time.perf_counter() - start:.1f}s; passes over up to {layer.dense_rows} tokens keep the default kernel"
        + (f"; packed passes padded to a cheaper width ({padded} tokens)" if padded else ""))
    return "fast"


def costs_file(target: Loaded, draft: Loaded | None = None) -> Path:
    """Where a pair's learned costs persist (Pair.remember_costs): one JSON file per target, draft,
    draft quantisation (with its INT8_SCHEME), device, dtype and engine, in $SPECDEC_COSTS if set
    (the test suite's own folder), else under the cache folder."""
    import hashlib

    from .offline import cache_dir

    parts = [target.name, target.device, target.dtype, target.engine]
    if draft is not None:
        scheme = f" scheme {INT8_SCHEME}" if draft.quantize == "int8" else ""
        parts += [draft.name, f"{draft.quantize}{scheme}", draft.engine]
    else:
        parts.append("no draft")
    digest = hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()[:16]
    stem = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in Path(target.name).name)[:40]
    folder = Path(os.environ["SPECDEC_COSTS"]) if os.environ.get("SPECDEC_COSTS") else cache_dir() / "costs"
    return folder / f"{stem}-{digest}.json"


QUANTIZE = ("int8",)


def check_quantize(quantize: str | None, device: torch.device) -> None:
    if quantize is None:
        return
    if quantize not in QUANTIZE:
        raise ValueError(f"unknown quantization {quantize!r}; choose one of {list(QUANTIZE)}")
    if device.type != "cpu":
        raise ValueError("int8 dynamic quantization runs on CPU only; on a GPU use the bf16 default")
