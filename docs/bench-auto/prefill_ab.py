"""The request's first round priced as the prompt's prefill (policy.CostPolicy.prefill_choice: a
draft there adds a few milliseconds a token to a pass that reads the prompt anyway, so it is worth
what the rounds after it would make in those seconds) against pricing it as any later round, on the
Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), 128 tokens, over ab_session.py's session (each lane its
own learned costs and recycling table; cold, then warm). The turns where it should show are short
answers, whose few rounds the first is a large share of; --turns picks them, --costs starts every
lane from a saved cost file, as a bench run does.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/prefill_ab.py --costs saved.json \
        --turns specdec-016-t0,specdec-018-t0,specdec-020-t0,specdec-024-t0,specdec-010-t0 [--sampled]
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "prices_prefill", {"prefill": True, "later": False})
