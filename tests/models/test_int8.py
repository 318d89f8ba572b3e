"""The int8 draft (models/int8.py): one scale per weight row, and the MLP output projection's
outlier activations multiplied outside the int8 kernel."""
import pytest
import torch
from torch import nn

from helpers import tiny_model
from specdec.models.int8 import OUTLIER_THRESHOLD, OutlierSplitLinear, quantize_int8


def test_int8_draft_scales_each_row_of_a_weight_on_its_own():
    """One scale per output row: a row of small weights keeps its precision beside a row of large
    ones, where one scale for the whole matrix rounds the small row to a few levels."""
    linear = nn.Linear(64, 2, bias=False)
    with torch.no_grad():
        linear.weight[0] = torch.linspace(-1e-3, 1e-3, 64)  # small weights
        linear.weight[1] = torch.linspace(-10.0, 10.0, 64)  # large ones
    weight = quantize_int8(nn.Sequential(linear))[0].weight()
    assert weight.qscheme() == torch.per_channel_affine
    small = weight.dequantize()[0]
    assert (small - linear.weight[0]).abs().max() < 1e-5  # per matrix: a step of 20 / 255 ~ 0.08
    assert small.unique().numel() > 32


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.down_proj = nn.Linear(256, 16)  # the name quantize_int8 knows an MLP's output by
        self.up_proj = nn.Linear(16, 256)  # any other name: int8 alone


def activations(rows: int) -> torch.Tensor:
    """An MLP's intermediate activations: small, but for one channel of one row hundreds of times larger."""
    x = torch.randn(rows, 256, generator=torch.Generator().manual_seed(1))
    x[rows // 2, 7] = 400.0
    return x


def error(layer: nn.Module, reference: nn.Linear, x: torch.Tensor) -> float:
    with torch.no_grad():
        exact = reference(x)
        return float((layer(x) - exact).abs().max() / exact.abs().max())


@pytest.mark.parametrize("rows", [1, 5])
def test_outlier_columns_are_multiplied_outside_the_int8_kernel(rows):
    """One scale per pass for the whole input: an outlier of 400 makes int8's step about 3, and the
    other channels (about 1) round to zero or one step. Split off, the rest keeps its precision."""
    mlp = Mlp()
    split = quantize_int8(mlp)
    assert isinstance(split.down_proj, OutlierSplitLinear) and not isinstance(split.up_proj, OutlierSplitLinear)
    plain = split.down_proj.quantized  # the same int8 weights, the whole input through the int8 kernel
    x = activations(rows)
    assert error(split.down_proj, mlp.down_proj, x) < 0.02
    assert error(plain, mlp.down_proj, x) > 5 * error(split.down_proj, mlp.down_proj, x)
    # Rows without an outlier: only the outlier's column leaves the kernel; the other rows' products are
    # the kernel's, on the smaller scale.
    calm = x.clone()
    calm[:, 7] = 0.0
    assert calm.abs().max() < OUTLIER_THRESHOLD
    with torch.no_grad():
        assert torch.equal(split.down_proj(calm), plain(calm))


def test_an_int8_model_keeps_the_output_of_its_mlps_close():
    """On a whole model: the logits of the int8 copy are closer to fp32's with the split than without,
    when the MLPs carry outlier activations (a channel of up_proj scaled up)."""
    model = tiny_model("llama", seed=3)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.mlp.up_proj.weight[5] *= 300.0
    ids = torch.arange(3, 40)[None]
    split = quantize_int8(model)
    splits = [m for m in split.modules() if isinstance(m, OutlierSplitLinear)]
    assert len(splits) == len(model.model.layers)
    with torch.no_grad():
        exact = model(input_ids=ids).logits
        with_split = (split(input_ids=ids).logits - exact).abs().mean()
        for m in splits:
            m.threshold = float("inf")  # no column ever leaves the kernel: per-channel int8 alone
        without = (split(input_ids=ids).logits - exact).abs().mean()
    assert with_split < without / 2


def test_costs_learned_under_another_int8_scheme_are_kept_apart(monkeypatch):
    """A cost file learned with another int8 draft (another INT8_SCHEME) would price this draft's
    tokens by that one's acceptance: the file's name changes with the scheme."""
    from specdec.engine.loaded import Loaded
    from specdec.models import loading

    target = Loaded("target", None, None, torch.device("cpu"), torch.float32, "fast")
    draft = Loaded("draft", None, None, torch.device("cpu"), torch.float32, "eager", "int8")
    fp32_draft = Loaded("draft", None, None, torch.device("cpu"), torch.float32, "eager")
    now = loading.costs_file(target, draft), loading.costs_file(target, fp32_draft)
    monkeypatch.setattr(loading, "INT8_SCHEME", loading.INT8_SCHEME - 1)
    assert loading.costs_file(target, draft) != now[0]
    assert loading.costs_file(target, fp32_draft) == now[1]
