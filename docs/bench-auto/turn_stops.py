"""Why an auto round stopped where it did: for each round of the named session turns (auto on the Qwen
pair, greedy, 128 tokens), the choice (cap k, source, this text's offset delta (confidence.TextShift),
the calibration's evidence, the trust region and the source's depth reach, whether a stop rule
drafts), then each staged pass of the draft model: its guesses, the confidences of the tokens it
yielded, S where the draft stopped after it, and, where it stopped on a token its pass had guessed,
the confidences of the rows that pass had already read on the draft's own path past the stop
(`ahead`: what a stop rule reading them, greedy only, would have seen for free). stop_trace.py
beside it prints the stop rule's own terms instead, over the six tasks in the bench's order.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/turn_stops.py --turns specdec-014-t1 \\
        [--costs PATH] > docs/bench-auto/turn_stops.txt
"""
import sys
import time

import torch

from ab_session import qwen_pair, saved_costs_from_argv, session_turns
from specdec.engine import policy
from specdec.engine.drafters import model

log: list = []
take = model.ModelDrafter._take
draft_choice = policy.CostPolicy.draft_choice


def logged_take(self, block, guesses, sampling, generator, stop, rows, confidences):
    before = len(confidences)
    kept, stopped = take(self, block, guesses, sampling, generator, stop, rows, confidences)
    ahead, i = [], len(kept)
    if stopped and i - 1 < len(guesses) and kept[-1] == guesses[i - 1]:  # the stop token was guessed
        while i < len(block):  # the rows read past it on the draft's own path
            token = int(block[i].argmax())
            ahead.append(round(float(torch.softmax(block[i].float(), -1)[token]), 2))
            if i >= len(guesses) or token != guesses[i]:
                break
            i += 1
    log.append((len(guesses), [round(c, 2) for c in confidences[before:]], "S" if stopped else "")
               + ((("ahead", ahead),) if ahead else ()))
    return kept, stopped


def logged_choice(self, source, k, gain, reach, why):
    choice = draft_choice(self, source, k, gain, reach, why)
    costs = self.costs.source(source)
    log.append(f"[k<={choice.k} delta={costs.text.delta:+.2f} calibration={costs.calibration.evidence:.0f} "
               f"reach={reach} depth_reach={self.depth_reach(source)} stop_rule={'yes' if choice.stop else 'no'}]")
    return choice


def trace_turn(pair, name: str, request) -> None:
    """Auto's rounds on one request, each with what the patched choice and passes logged (install
    logged_take and logged_choice first), then the turn's seconds."""
    log.clear()
    start = time.perf_counter()
    for event in pair.speculative(pair.auto(request)):
        print(f"  {event.source or 'plain':20s} drafted {len(event.drafted):2d} kept {event.accepted:2d} | "
              + " ".join(map(str, log)), flush=True)
        log.clear()
    print(f"{name}: {time.perf_counter() - start:.2f} s", flush=True)


def main() -> None:
    model.ModelDrafter._take, policy.CostPolicy.draft_choice = logged_take, logged_choice
    pair = qwen_pair()
    saved_costs_from_argv(pair)
    turns = session_turns(pair)
    pair.warm_up(pair.auto(turns[0][1]))
    print("saved costs:", pair.costs_status, flush=True)
    for name, request in turns:
        trace_turn(pair, name, request)


if __name__ == "__main__":
    main()
