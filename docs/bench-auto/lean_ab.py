"""The lean decoder layers (models/lean.py) end to end: auto on the Qwen pair (int8 draft) over the
A/B session (ab_session.py: 21 turns, interleaved turn by turn, a cold pass and a warm one), one lane
with every layer of the target and the draft lean, one with transformers' own layers, the same
weights and kernels otherwise (the layers' class switched before each lane's turn). With
--standard, then our standard decoding of each turn's prompt, the same two ways, interleaved, once a
turn (another half hour on the 2-core host).

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/lean_ab.py > docs/bench-auto/lean_ab.txt

(--smollm2: SmolLM2 alone.) lean_layers.py times single passes; this, whole answers.
"""
import sys
import time

from ab_session import print_ratios, qwen_pair, run_lanes, session_turns, smollm2_pair
from lean_layers import lean_layers, switch as switch_layers


def main() -> None:
    pair = smollm2_pair() if "--smollm2" in sys.argv else qwen_pair()
    layers = lean_layers(pair.target.model, *([pair.draft.model] if pair.draft is not None else []))
    print(f"{len(layers)} lean layers", flush=True)

    def switch(lane: str) -> None:
        switch_layers(layers, lane == "lean")

    passes = run_lanes(pair, {"lean": pair.auto, "own": pair.auto}, before=switch)
    print_ratios(passes, [("lean", "own")])
    if "--standard" in sys.argv:
        standard_ab(pair, switch)


def standard_ab(pair, switch) -> None:
    """Our standard decoding of each turn's prompt with lean layers and with transformers' own."""
    total = {"lean": [0, 0.0], "own": [0, 0.0]}
    for turn, (name, request) in enumerate(session_turns(pair)):
        for lane in ("lean", "own") if turn % 2 else ("own", "lean"):  # who goes first alternates
            switch(lane)
            start = time.perf_counter()
            tokens = sum(1 for _ in pair.standard(request))
            total[lane][0] += tokens
            total[lane][1] += time.perf_counter() - start
    rates = {lane: tokens / seconds for lane, (tokens, seconds) in total.items()}
    print(f"standard decoding: lean {rates['lean']:.2f} tok/s, own {rates['own']:.2f} tok/s, "
          f"lean/own {rates['lean'] / rates['own']:.3f}", flush=True)


if __name__ == "__main__":
    main()
