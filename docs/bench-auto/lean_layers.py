"""What the lean decoder layers save a pass (models/lean.py): each model loaded as the fast engine
loads it (stacked projections, int8 or prepacked, lean layers), then run with its layers switched
between the lean forward and transformers' own, the same weights either way. Two caches read the
same 100-token context and take the same passes, one after the other, interleaved pass by pass (so
the host's drift falls on both): 40 timed passes of each width after 5 untimed, with a rollback of
the cache before each pass, as a draft or verify round does (fused_projections.py's race). The
logits of the two are compared at every pass (max |difference| over the finite ones; 0 means
bitwise equal).

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/lean_layers.py > docs/bench-auto/lean_layers.txt

The models: SmolLM2-135M (the embedded default, fp32), the Qwen 0.5B draft in int8 with its short
head (auto's CPU draft, as the drafter reads it), and Qwen2.5-Coder-1.5B (the target, fp32).
"""
import torch

from fused_projections import print_header, print_race, race
from specdec.engine import short_head
from specdec.engine.kvcache import CachedModel
from specdec.models.lean import is_lean, lean_class, own_class
from specdec.models.loading import load_model

MODELS = (("embedded", None, None), ("qwen-coder-0.5b", "int8", short_head.ROWS), ("qwen-coder-1.5b", None, None))
WIDTHS = (1, 5, 9)


def lean_layers(*models: torch.nn.Module) -> list[torch.nn.Module]:
    return [layer for model in models for layer in model.modules() if is_lean(layer)]


def switch(layers: list[torch.nn.Module], lean: bool) -> None:
    """Each layer's class: its lean subclass, or the class transformers built."""
    for layer in layers:
        layer.__class__ = lean_class(own_class(layer)) if lean else own_class(layer)


def main() -> None:
    print_header("lean_layers.py", "transformers' layers -> lean; lean / own")
    for spec, quantize, head_rows in MODELS:
        model = load_model(spec, "cpu", "float32", quantize=quantize, engine="fast", log=lambda m: None).model
        layers = lean_layers(model)
        lanes = {"own": CachedModel(model, head_rows=head_rows), "lean": CachedModel(model, head_rows=head_rows)}
        for width in WIDTHS:
            seconds, worst = race(lanes, width, before=lambda name: switch(layers, name == "lean"))
            print_race(f"{spec} {quantize or 'fp32'} width {width}", seconds, worst)
        del model, layers, lanes


if __name__ == "__main__":
    main()
