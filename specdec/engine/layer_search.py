"""Which layers should self-speculation skip? A small offline search, as Draft & Verify does.

For a prompt set, the target writes its greedy continuation once. A candidate layer subset is then
scored teacher-forced, in one forward pass per sequence: alpha is how often the subset's argmax
equals the target's on the continuation (the greedy acceptance rate of one drafted token), and
soft_alpha is sum_x min(p, q) at temperature 1 (a sampler's). Its cost per drafted token is taken as
its share of the layers (embedding and head are small next to the layers of these models).

The search removes one layer at a time, each time the one whose removal keeps alpha highest
(backward elimination, ~n^2/2 scored subsets), and also scores the plain early exits (the first L
layers). The best subset maximises the alpha-geometric speedup (1 - alpha^(k+1)) / ((1 - alpha)(k c + v))
over k; it is saved as JSON and read back by --draft-layers FILE.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from .drafters.layers import check_layers, decoder_layers, layer_view, parse_layers


@dataclass(frozen=True)
class LayerChoice:
    layers: tuple[int, ...]
    alpha: float  # teacher-forced greedy agreement with the target
    soft_alpha: float  # teacher-forced sum_x min(p, q) at T = 1
    cost: float  # draft cost per token / target cost per token, taken as len(layers) / n_layers
    how: str  # "early-exit" (the first L layers) or "skip" (found by elimination)

    def speedup(self, verify_steps: float = 1.0, k_max: int = 16) -> tuple[float, int]:
        """The best predicted speedup over k = 1..k_max, and that k (alpha-geometric model)."""
        return max((expected_speedup(self.alpha, k, self.cost, verify_steps), k) for k in range(1, k_max + 1))


def expected_speedup(alpha: float, k: int, c: float, verify_steps: float = 1.0) -> float:
    tokens = k + 1 if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
    return tokens / (k * c + verify_steps)


@dataclass(frozen=True)
class Teacher:
    """The target's own greedy continuations, and its distributions over them."""

    sequences: tuple[tuple[int, ...], ...]  # prompt + continuation
    starts: tuple[int, ...]  # where each continuation starts
    argmax: tuple[torch.Tensor, ...]  # the target's argmax at each continuation position
    probs: tuple[torch.Tensor, ...]  # its softmax at T = 1 there


@torch.inference_mode()
def teach(model: torch.nn.Module, prompts: Sequence[list[int]], continuations: Sequence[list[int]]) -> Teacher:
    sequences, starts, argmax, probs = [], [], [], []
    for prompt, continuation in zip(prompts, continuations):
        sequence = list(prompt) + list(continuation)
        logits = _logits(model, sequence, len(prompt))
        sequences.append(tuple(sequence))
        starts.append(len(prompt))
        argmax.append(logits.argmax(-1))
        probs.append(torch.softmax(logits.float(), -1))
    return Teacher(tuple(sequences), tuple(starts), tuple(argmax), tuple(probs))


@torch.inference_mode()
def score(model: torch.nn.Module, layers: Sequence[int], teacher: Teacher, how: str = "skip") -> LayerChoice:
    view = layer_view(model, layers)
    hits = total = 0
    overlap = 0.0
    for sequence, start, argmax, p in zip(teacher.sequences, teacher.starts, teacher.argmax, teacher.probs):
        logits = _logits(view, list(sequence), start)
        hits += int((logits.argmax(-1) == argmax).sum())
        overlap += float(torch.minimum(p, torch.softmax(logits.float(), -1)).sum())
        total += len(argmax)
    n_layers = len(decoder_layers(model))
    return LayerChoice(tuple(layers), hits / total, overlap / total, len(layers) / n_layers, how)


def search(model: torch.nn.Module, teacher: Teacher, min_layers: int = 1, floor: float = 0.05,
           log: Callable[[str], None] = lambda message: None) -> list[LayerChoice]:
    """Every early exit, and the best subset of each size from backward elimination (stopping once
    the best alpha falls below floor or the size reaches min_layers)."""
    n_layers = len(decoder_layers(model))
    choices = [score(model, tuple(range(n)), teacher, "early-exit") for n in range(max(1, min_layers), n_layers)]
    current = tuple(range(n_layers))
    while len(current) > max(1, min_layers):
        trials = [score(model, tuple(i for i in current if i != drop), teacher) for drop in current]
        best = max(trials, key=lambda choice: choice.alpha)
        log(f"{len(best.layers)} layers: alpha {best.alpha:.3f} without layer {set(current) - set(best.layers)}")
        if best.alpha < floor:
            break
        choices.append(best)
        current = best.layers
    return choices


def best(choices: Sequence[LayerChoice], verify_steps: float = 1.0) -> LayerChoice:
    return max(choices, key=lambda choice: choice.speedup(verify_steps)[0])


def save(path: str | Path, chosen: LayerChoice, choices: Sequence[LayerChoice], about: dict) -> None:
    payload = {**about, "layers": list(chosen.layers), "best": asdict(chosen),
               "choices": [asdict(c) for c in choices]}
    Path(path).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def load(path: str | Path, n_layers: int) -> tuple[int, ...]:
    """The layer set a search saved (its "layers" field), checked against the model it is used on."""
    try:
        layers = json.loads(Path(path).read_text(encoding="utf-8"))["layers"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"cannot read a layer set from {path}: {error}") from error
    return check_layers(layers, n_layers)


def layers_from(text: str | None, model: torch.nn.Module) -> tuple[int, ...] | None:
    """--draft-layers: None or '' (the default first half), a saved search (a .json file), or a list
    like '0-7,10'."""
    if not text:
        return None
    n_layers = len(decoder_layers(model))
    if text.endswith(".json") or Path(text).is_file():
        return load(text, n_layers)
    return parse_layers(text, n_layers)


def _logits(model: torch.nn.Module, sequence: list[int], start: int) -> torch.Tensor:
    """Logits predicting sequence[start:], from one pass over the whole sequence."""
    device = next(model.parameters()).device
    ids = torch.tensor([sequence], dtype=torch.long, device=device)
    out = model(input_ids=ids, use_cache=False)
    return out.logits[0, start - 1 : len(sequence) - 1]
