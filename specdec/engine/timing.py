"""Wall-clock reads that wait for the device first, so queued GPU work is counted where it belongs."""
from __future__ import annotations

import time

import torch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class Clock:
    def __init__(self, device: torch.device | str):
        self.device = torch.device(device)

    def now(self) -> float:
        synchronize(self.device)
        return time.perf_counter()
