"""transformers' algorithm inside our engine (the draft model, k = 20, confidence stop 0.4: its
assisted defaults) against transformers itself, on the same fast Qwen pair (1.5B + int8 0.5B, greedy,
128 tokens), beside our standard decoding, our draft model under the cost policy and auto; lanes
interleaved per prompt, each ratio to transformers the median of the repeats. This is the run that
showed the draft's cost, not the policy, was what kept auto level with transformers (notes.md).
It ran before staged drafting and before each lane had its own recycling table (auto's rows read a
table that earlier lanes had filled): read the std, hf, ours-hfalgo and dm-cost columns.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/same_algorithm.py code-00,code-01,code-edit-05,explain-08 2 > docs/bench-auto/same_algorithm.txt
"""
import json
import statistics
import sys
import time
