"""What a pass of the int8 Qwen2.5-Coder-0.5B draft costs by the number of tokens it reads, after a
300-token context (median of 25 passes each; the cache cropped back after each): the economics of
staged drafting (specdec/engine/drafters/staged.py). Output: draft_pass_widths.txt.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/draft_pass_widths.py > docs/bench-auto/draft_pass_widths.txt
"""
import time

import torch
from transformers import DynamicCache

from specdec.models.loading import load_model

draft = load_model("qwen-coder-0.5b", torch.device("cpu"), torch.float32, False, log=lambda m: None,
                   quantize="int8").model
context = torch.randint(0, 1000, (1, 300))
with torch.inference_mode():
    cache = DynamicCache()
    draft(context, past_key_values=cache, use_cache=True)
    for n in [1, 2, 3, 4, 6, 8, 12]:
        seconds = []
        for _ in range(25):
            tokens = torch.randint(0, 1000, (1, n))
            start = time.perf_counter()
            draft(tokens, past_key_values=cache, use_cache=True)
            seconds.append(time.perf_counter() - start)
            cache.crop(-n)
        seconds.sort()
        print(f"{n:2d} tokens: {seconds[len(seconds) // 2] * 1e3:.1f} ms", flush=True)
