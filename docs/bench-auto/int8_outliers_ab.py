"""The loader's int8 draft (per-channel, the MLP output projection's outlier activations multiplied
outside the int8 kernel: models/int8.py) against per-channel int8 alone (the loader's before), for
auto on the Qwen pair (Qwen2.5-Coder-1.5B, fast engine), 128 tokens, over ab_session.py's session
(21 turns, each lane its own learned costs and recycling table; cold, then warm); greedy, or with
--sampled at temperature 0.7, top-p 0.9. One process, one target: the lanes differ in the draft alone.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/int8_outliers_ab.py > docs/bench-auto/int8_outliers_ab.txt
"""
import sys
from dataclasses import replace

import torch

from ab_session import SAMPLED, print_ratios, qwen_pair, run_lanes
from draft_quantization import quantized


def main() -> None:
    pair = qwen_pair()
    from specdec.models.loading import load_model

    fp32 = load_model("qwen-coder-0.5b", pair.target.device, pair.target.dtype, False, log=lambda m: None,
                      engine="eager").model
    per_channel = quantized(fp32, torch.ao.quantization.per_channel_dynamic_qconfig)
    drafts = {"split": pair.draft, "per-channel": replace(pair.draft, model=per_channel)}
    del fp32
    auto = pair.auto
    if "--sampled" in sys.argv:
        auto = lambda request: pair.auto(replace(request, sampling=SAMPLED))  # noqa: E731

    def use(lane: str) -> None:
        pair.draft = drafts[lane]

    passes = run_lanes(pair, dict.fromkeys(drafts, auto), before=use)
    print_ratios(passes, [("split", "per-channel")])


if __name__ == "__main__":
    main()
