"""Which kernel should the Qwen 0.5B draft run on a CPU with AMX (Intel Sapphire Rapids and later)?

A draft step at one token reads every weight it multiplies by once: 494 M of the 630 M it has as
loaded (the embedding is looked up, a row a token), about 0.49 GB in int8 and 0.99 GB in bf16, so at
25-30 GB/s its floor is about 17-20 ms against 33-40 ms. AMX's tiles (bf16 and int8 matrix units) do
the arithmetic of a wide pass faster, but the arithmetic of a one-token pass is not what bounds it.
So the question is measured, not argued: each variant loaded as load_model loads it (stacked
projections, lean layers), then raced against the int8 draft the engine runs today (PyTorch's
default quantized engine, "x86", which takes FBGEMM's kernels for a dynamic linear layer),
interleaved pass by pass over the same 100-token context with a rollback before each pass
(fused_projections.py's race); every lane reads its whole LM head (the drafter's short head,
engine/short_head.py, is left out: its rows are re-packed under the global quantized engine, which
would hand the oneDNN lane's head back to FBGEMM):

- int8 through oneDNN (torch.backends.quantized.engine = "onednn" while quantizing: the weights are
  packed for oneDNN's int8 kernels, which use AMX's int8 tiles where the CPU has them);
- bf16 as the fast engine runs it: PyTorch's own bf16 linear for passes up to its calibrated
  `dense_rows` tokens (printed; ATen routes a bf16 GEMM to oneDNN where the CPU does bf16,
  use_mkldnn_bf16_matmul), a oneDNN-packed copy for wider ones (models/fast.py).

The logits of the two lanes differ (other rounding), and the last column says by how much: a
draft's precision moves how often its tokens are kept, never the output.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_kernels.py > docs/bench-auto/draft_kernels.txt
"""
import torch

from fused_projections import print_header, print_race, race
from specdec.engine.kvcache import CachedModel
from specdec.models.fast import fast_layers
from specdec.models.loading import load_model

SPEC = "qwen-coder-0.5b"
WIDTHS = (1, 5, 9)


def load(variant: str) -> torch.nn.Module:
    """The draft as one variant runs it: "int8 x86" (today's), "int8 onednn" or "bf16"."""
    quiet = dict(engine="fast", log=lambda m: None)
    if variant == "bf16":
        return load_model(SPEC, "cpu", "bfloat16", **quiet).model
    default = torch.backends.quantized.engine
    torch.backends.quantized.engine = variant.split()[1]
    try:
        return load_model(SPEC, "cpu", "float32", quantize="int8", **quiet).model
    finally:
        torch.backends.quantized.engine = default


def main() -> None:
    flags = open("/proc/cpuinfo").read()
    amx = sorted({word for word in flags.split() if word.startswith("amx")})
    print_header("draft_kernels.py", "today's int8 (x86 engine) -> the variant; variant / today's")
    print(f"# quantized engines: {torch.backends.quantized.supported_engines}; AMX flags: {amx or 'none'}")
    today = load("int8 x86")
    for variant in ("int8 onednn", "bf16"):
        other = load(variant)
        if layers := fast_layers(other):
            print(f"# {variant}: passes over up to {layers[0].dense_rows} tokens on the dense kernel, wider packed")
        lanes = {"today": CachedModel(today), variant: CachedModel(other)}
        for width in WIDTHS:
            seconds, worst = race(lanes, width)
            print_race(f"{SPEC} {variant} width {width}", seconds, worst)
        del other, lanes


if __name__ == "__main__":
    main()
