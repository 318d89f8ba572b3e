"""What the benchmark watches besides the clock: other processes' CPU use, disk page faults, and
forward passes, so a noisy measurement can be recognised and a peer's work compared with ours."""
from __future__ import annotations

import os
import platform
from pathlib import Path

import torch


class OtherLoad:
    """CPU cores used by *other* processes over an interval: all busy time in /proc/stat minus this
    process's own. On a shared machine this is the noise that matters, so every lane records it and
    a repeat measured under load can be redone. None where /proc/stat is missing (not Linux)."""

    def __init__(self):
        self.start = self._snapshot()
        self.faults = self.major_faults()

    def faulted(self) -> int | None:
        end = self.major_faults()
        return None if end is None or self.faults is None else end - self.faults

    @staticmethod
    def _snapshot():
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        times = os.times()
        busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle and iowait
        return busy / os.sysconf("SC_CLK_TCK"), times.user + times.system, times.elapsed

    @staticmethod
    def major_faults() -> int | None:
        """Page faults that read from disk so far: weights loaded by mmap (safetensors) come back from
        disk after the kernel evicts them, a stall no CPU counter shows."""
        try:
            import resource
        except ImportError:
            return None
        return resource.getrusage(resource.RUSAGE_SELF).ru_majflt

    def cores(self) -> float | None:
        end = self._snapshot()
        if self.start is None or end is None or end[2] <= self.start[2]:
            return None
        others = (end[0] - self.start[0]) - (end[1] - self.start[1])
        return max(0.0, others / (end[2] - self.start[2]))


class Forwards:
    """Counts forward passes of the target and the draft while a lane runs (forward pre-hooks, a
    Python call each): target passes are rounds for a speculative lane, tokens for a plain one, and
    draft passes per round how often the draft ran: one per drafted token for transformers' and for
    ours where no guess held; fewer where our staged passes drafted several (engine/drafters/staged.py).

    The hooks sit on each model's body (transformers' base_model: the decoder stack), which every
    pass runs once, whoever calls it: a draft with a short head (engine/short_head.py) runs its body
    and its own head, never the model's top-level forward, so a hook there counted none of its
    passes (AUTO.md read 0.000 draft passes a round for auto)."""

    def __init__(self, target: torch.nn.Module, draft: torch.nn.Module | None = None):
        self.target = self.draft = 0
        self._hooks = [body(target).register_forward_pre_hook(lambda *_: self._add("target"))]
        if draft is not None:
            self._hooks.append(body(draft).register_forward_pre_hook(lambda *_: self._add("draft")))

    def _add(self, which: str) -> None:
        setattr(self, which, getattr(self, which) + 1)

    def close(self) -> dict:
        for hook in self._hooks:
            hook.remove()
        return {"target_forwards": self.target, "draft_forwards": self.draft}


def body(model: torch.nn.Module) -> torch.nn.Module:
    """The module every pass of model runs once: its base_model (the model itself where it has none)."""
    return getattr(model, "base_model", model)


def machine() -> dict:
    """What the report states about where it ran."""
    import transformers

    info = _read("/proc/cpuinfo").splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
               platform.processor() or "unknown CPU")
    # A virtual CPU's name can hide its generation ("AMD EPYC" on hosts with and without AVX-512, whose
    # fp32 kernels differ 2-3x on these models; "Intel Xeon Processor" with and without AMX, the matrix
    # units oneDNN's bf16 and int8 kernels use): the widest vector extension and AMX go beside it.
    flags = set(next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), []))
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else ""
    extensions = [name for name in (vector, "AMX" if "amx_tile" in flags else "") if name]
    cpu += f" ({', '.join(extensions)})" if extensions else ""
    mem = next((int(line.split()[1]) / 2**20 for line in _read("/proc/meminfo").splitlines()
                if line.startswith("MemTotal")), None)
    if torch.cuda.is_available():
        cpu += f"; GPU {torch.cuda.get_device_name(0)}"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem) if mem else None,
            "threads": torch.get_num_threads(), "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "platform": platform.platform(terse=True)}


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""
