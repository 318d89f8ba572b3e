"""How the draft's int8 copy agrees with the target, by task: the Qwen pair (Qwen2.5-Coder-1.5B, fast
engine) and its 0.5B draft in fp32, in int8 with one scale per weight matrix (PyTorch's default
dynamic quantization, what the loader used up to now), and in int8 with one scale per output row
(per-channel), in int8 as the loader now quantizes it (per-channel, and the MLP output projection's
outlier activations multiplied outside the int8 kernel: models/int8.py), and in bf16 on the fast
engine (oneDNN's prepacked bf16 kernels, AVX512-BF16 here). The twelve questions of
`run.sh qwen-two-per-task`, first turns, 128 tokens: each answer
is our standard decoding's; each draft reads prompt and answer in one pass, and each answer position
gives the rank of the target's token in the draft's order (draft_ranks.py's method). Then each draft's
decode step, timed (one token after a 64-token prompt: the median of 30 after 5, in three rounds over
the drafts in turn; the median of the three). A diagnostic, not a
benchmark: the share of positions where the draft's top-1 is the target's token is what a greedy chain
can keep.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_quantization.py > docs/bench-auto/draft_quantization.txt
    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_quantization.py --kept > docs/bench-auto/draft_quantization.kept.txt
    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/draft_quantization.py --thresholds > docs/bench-auto/draft_quantization.thresholds.txt

--kept: instead, per-channel int8 with one group of layers kept in fp32 (eager: their step times are not
the fast engine's), to find where the int8 draft loses its agreement.
--thresholds: instead, the loader's int8 at other outlier thresholds (LLM.int8()'s 6 is the loader's).
"""
import json
import sys
from pathlib import Path
import statistics
import time
import warnings
from dataclasses import replace

import torch

from ab_session import BASE
from specdec.bench import spec_bench
from specdec.engine.pair import Pair
from specdec.models.int8 import OutlierSplitLinear, quantize_int8
from specdec.models.loading import load_model

QUESTIONS = ("specdec-008,specdec-009,specdec-016,specdec-017,specdec-018,specdec-019,specdec-020,"
             "specdec-021,specdec-022,specdec-023,specdec-024,specdec-025").split(",")
TASKS = ("coding", "translation", "summarization", "qa", "math_reasoning", "rag")


def quantized(model: torch.nn.Module, qconfig) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear: qconfig}, dtype=torch.qint8)


KEPT = {"lm_head": ("lm_head",), "down_proj": ("down_proj",), "gate_proj, up_proj": ("gate_proj", "up_proj"),
        "q, k, v, o_proj": ("q_proj", "k_proj", "v_proj", "o_proj")}


def int8_but(model: torch.nn.Module, kept: tuple[str, ...]) -> torch.nn.Module:
    """Per-channel int8 for every Linear whose name ends in none of `kept`."""
    qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
    names = {name: qconfig for name, module in model.named_modules()
             if isinstance(module, torch.nn.Linear) and not name.endswith(kept)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, names, dtype=torch.qint8)


class Bf16Linear(torch.nn.Module):
    """A Linear whose weight is bf16: its input rounded to bf16, its output back to the input's dtype."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight = torch.nn.Parameter(linear.weight.detach().to(torch.bfloat16), requires_grad=False)
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach().to(torch.bfloat16),
                                                                          requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x.to(torch.bfloat16), self.weight, self.bias).to(x.dtype)


def int8_bf16(model: torch.nn.Module, kept: tuple[str, ...]) -> torch.nn.Module:
    """Per-channel int8, but the layers named by `kept` in bf16."""
    quantized_model = int8_but(model, kept)
    for name, module in list(quantized_model.named_modules()):
        if isinstance(module, torch.nn.Linear) and name.endswith(kept):
            parent, _, child = name.rpartition(".")
            setattr(quantized_model.get_submodule(parent), child, Bf16Linear(module))
    return quantized_model


def with_threshold(model: torch.nn.Module, threshold: float) -> torch.nn.Module:
    for module in model.modules():
        if isinstance(module, OutlierSplitLinear):
            module.threshold = threshold
    return model


def answer_logits(draft: torch.nn.Module, prompt: list[int], answer: list[int]) -> torch.Tensor:
    """The draft's logits for each answer position, given the true prefix: one teacher-forced pass."""
    with torch.inference_mode():
        logits = draft(input_ids=torch.tensor([prompt + answer])).logits[0].float()
    return logits[len(prompt) - 1: len(prompt) - 1 + len(answer)]


def ranks(draft: torch.nn.Module, prompt: list[int], answer: list[int]) -> list[int]:
    rows = answer_logits(draft, prompt, answer)
    return [int((row > row[token]).sum()) for row, token in zip(rows, answer)]


def step_ms(draft: torch.nn.Module) -> float:
    ids = torch.arange(100, 164)[None]
    with torch.inference_mode():
        cache = draft(input_ids=ids, use_cache=True).past_key_values
        times = []
        for i in range(35):
            start = time.perf_counter()
            draft(input_ids=torch.tensor([[200 + i]]), past_key_values=cache, use_cache=True)
            times.append(time.perf_counter() - start)
            cache.crop(-1)  # back to the prompt (a negative count: tokens to drop)
    return 1000 * statistics.median(times[5:])


def main() -> None:
    quiet = lambda message: None  # noqa: E731
    target = load_model("qwen-coder-1.5b", None, None, False, log=quiet)
    fp32 = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=quiet, engine="eager").model
    qc = torch.ao.quantization
    if "--kept" in sys.argv:
        drafts = {f"int8 but {group} fp32": int8_but(fp32, kept) for group, kept in KEPT.items()}
        drafts["int8 but down_proj bf16"] = int8_bf16(fp32, ("down_proj",))
    elif "--thresholds" in sys.argv:
        drafts = {"int8 per-channel": quantized(fp32, qc.per_channel_dynamic_qconfig)}
        for threshold in (2.0, 6.0, 20.0, 60.0):
            drafts[f"int8, outliers > {threshold:g} split"] = with_threshold(quantize_int8(fp32), threshold)
    else:
        drafts = {"fp32": fp32, "int8 per-tensor": quantized(fp32, qc.default_dynamic_qconfig),
                  "int8 per-channel": quantized(fp32, qc.per_channel_dynamic_qconfig),
                  "int8, the loader's": quantize_int8(fp32),
                  "bf16": load_model("qwen-coder-0.5b", target.device, torch.bfloat16, False, log=quiet).model}
    pair = Pair(target)
    questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
    found = {name: {task: [] for task in TASKS} for name in drafts}
    # The target's answers, kept across runs of this script (they take most of its time).
    cache = Path("/tmp/specdec-draft-quantization-answers.json")
    answers = json.loads(cache.read_text()) if cache.exists() else {}
    for qid in QUESTIONS:
        question = questions[qid]
        request = replace(BASE, prompt=question.turns[0])
        prompt = pair.prompt_ids(request)
        answer = answers[qid] if qid in answers else [event.token for event in pair.standard(request)]
        answers[qid] = answer
        for name, draft in drafts.items():
            found[name][question.category] += ranks(draft, prompt, answer)
    cache.write_text(json.dumps(answers))
    print("# the target's greedy token in each draft's ranking (share of positions within the draft's top-r)")
    steps = {name: [] for name in drafts}
    for _ in range(3):
        for name, draft in drafts.items():
            steps[name].append(step_ms(draft))
    for name in drafts:
        every = [r for task in TASKS for r in found[name][task]]
        print(f"{name:18s} step {statistics.median(steps[name]):5.1f} ms")
        for task, rows in [("all", every)] + [(task, found[name][task]) for task in TASKS]:
            top = [sum(rank < r for rank in rows) / len(rows) for r in (1, 4)]
            print(f"  {task:16s} {len(rows):4d}  top-1 {top[0]:.2f}  top-4 {top[1]:.2f}")


if __name__ == "__main__":
    main()
