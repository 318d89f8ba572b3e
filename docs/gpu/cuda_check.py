"""The engine on a CUDA device: what the CPU suite proves, checked where no test of ours can run.

No GPU is lent to this project in practice, so the CUDA path is kept thin and built from upstream
parts (transformers' models and caches, torch's generators and kernels; engine/timing.Clock waits
for the device before each clock read). When a session is lent one, this script is the check, run
there on the device image's torch (its transformers replaced by ours, carried as a wheel, when they
differ); it needs neither gradio nor plotly. The output beside it is the last run's.

    PYTHONPATH=.:tests python3 docs/gpu/cuda_check.py [cuda] > docs/gpu/cuda_check.txt
    (another device name runs the same checks there, e.g. cpu: slow, and part 3 is skipped)

1. Greedy identity. Every drafter (the draft model, prompt lookup, hybrid, self-speculation, the
   draft tree, lookup-tree, token recycling, auto's mixed drafter under the cost policy, and a draft
   with another tokenizer) against standard decoding, on tiny seeded models (tests/helpers.py), in
   fp32 and bf16: the tokens must be identical, or a divergence must be a numerical tie the target
   itself cannot resolve (engine/verdicts.py; in bf16 a verify pass over k + 1 rows and a one-row
   step may round a logit differently).
2. Sampled exactness. The seeded chi-square of tests/engine/test_sampling_e2e.py on the device's
   generators, for a draft chain and a draft tree: the first two tokens' counts against the target's
   exact joint (must pass) and against the draft's (must fail: the power check).
3. The standard lane against `model.generate`, greedy, on a random model of Qwen2.5-0.5B's shape in
   bf16: medians of interleaved timed runs after a warm-up, the same tokens. The baseline must not be
   handicapped on this device either.
4. transformers' assisted generation as the bench runs it (spec_bench_run._peer_turn) on the device.
5. The CLI as a user runs it, on model folders saved to disk (`python -m specdec generate`, no
   --device): the loader must pick the GPU and bf16 by itself, keep both models eager, leave an
   `--auto` draft unquantized there (int8 is CPU-only), persist the learned costs, and both lanes'
   tokens must agree.
"""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace

import torch

from chi_square import chi_square, critical, joint
from helpers import WORDS, perturbed, tiny_model, translated, word_tokenizer
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import make_drafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.loaded import Loaded
from specdec.engine.pair import Pair, Request
from specdec.engine.timing import Clock

DEVICE = torch.device(sys.argv[1] if len(sys.argv) > 1 else "cuda")
DRAFTERS = ["draft-model", "prompt-lookup", "hybrid", "self", "draft-tree", "lookup-tree", "recycling", "auto"]
PROMPTS = ["w5 w9 w12 w40 w7 w5 w9 w12", "w3 w4 w5 w6 w7 w8 w3 w4 w5", "w60 w2 w33 w71 w90 w60 w2 w33 w71"]
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def greedy_identity(dtype: torch.dtype) -> None:
    """1. Every drafter's greedy tokens against standard decoding's."""
    tokenizer = word_tokenizer(len(WORDS), WORDS)
    target = tiny_model("qwen2", seed=7, vocab=len(WORDS), layers=4, hidden=128)
    draft = perturbed(target, 0.03)
    on = lambda model, name: Loaded(name, model.to(DEVICE, dtype), tokenizer, DEVICE, dtype)  # noqa: E731
    pair = Pair(on(target, "target"), on(draft, "draft"))
    for drafter in DRAFTERS:
        rounds = accepted = ties = 0
        for prompt in PROMPTS:
            request = Request(prompt, 40, Sampling(), Speculation(k=4, k_max=8, tree=TreeShape(8, 2)),
                              drafter=drafter, raw=True, draft_layers=(0, 1) if drafter == "self" else None)
            request = pair.auto(request) if drafter == "auto" else request
            ids = pair.prompt_ids(request)
            standard = [e.token for e in pair.standard(request, ids)]
            events = list(pair.speculative(request, ids))
            rounds, accepted = rounds + len(events), accepted + sum(e.accepted for e in events)
            divergence = pair.divergence(ids, standard, [t for e in events for t in e.tokens])
            if divergence is not None and divergence.numerical_tie:
                ties += 1
            elif divergence is not None:
                check(False, f"{dtype} {drafter}: {divergence.describe()}")
        check(accepted > 0, f"{dtype} {drafter}: greedy identical on {len(PROMPTS)} prompts "
                            f"({rounds} rounds, {accepted} drafted tokens kept, {ties} numerical ties)")
    # A draft with another tokenizer (the same words at other ids): the cross-tokenizer drafter.
    draft_tokenizer = word_tokenizer(0, WORDS[:3] + WORDS[:2:-1] + [f"x{i}" for i in range(10)])
    cross = Loaded("cross", translated(target.cpu().float(), tokenizer, draft_tokenizer).to(DEVICE, dtype),
                   draft_tokenizer, DEVICE, dtype)
    pair = Pair(on(target, "target"), cross)
    request = Request(PROMPTS[0], 40, Sampling(), Speculation(k=4), drafter="cross-tokenizer", raw=True)
    ids = pair.prompt_ids(request)
    standard = [e.token for e in pair.standard(request, ids)]
    events = list(pair.speculative(request, ids))
    divergence = pair.divergence(ids, standard, [t for e in events for t in e.tokens])
    check(divergence is None or divergence.numerical_tie,
          f"{dtype} cross-tokenizer: greedy identical ({sum(e.accepted for e in events)} drafted tokens kept)")


def sampled_exactness(drafter_name: str, runs: int = 2000) -> None:
    """2. The first two tokens' distribution, chi-square against the target's exact joint."""
    vocab, prompt = 8, [3, 5, 7, 3, 5, 6, 4, 3, 5]
    target = tiny_model("llama", seed=21, vocab=vocab, hidden=32).to(DEVICE)
    draft = perturbed(target, 0.5, seed=4)
    lane = CachedModel(target)
    drafter = make_drafter(drafter_name, draft, vocab, target=lane, tree=TreeShape(4, 2))
    sampling = Sampling(temperature=0.8, top_k=6, top_p=0.9)
    counts, accepted, rejected = torch.zeros(vocab, vocab), 0, 0
    for seed in range(runs):
        rounds = list(speculative_decode(lane, drafter, prompt, Speculation(k=2), replace(sampling, seed=seed), 3))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        accepted += sum(r.accepted for r in rounds)
        rejected += sum(r.accepted < len(r.drafted) for r in rounds)
    stat, dof = chi_square(counts, joint(target, sampling, prompt, vocab).cpu(), runs)
    wrong, wrong_dof = chi_square(counts, joint(draft, sampling, prompt, vocab).cpu(), runs)
    check(accepted > runs // 20 and rejected > runs // 20 and stat < critical(dof) and wrong > critical(wrong_dof),
          f"sampled {drafter_name}: chi-square {stat:.1f} < {critical(dof):.1f} against the target ({dof} dof), "
          f"{wrong:.1f} > {critical(wrong_dof):.1f} against the draft; {runs} runs, {accepted} kept, "
          f"{rejected} rejections")


def standard_against_generate(repeats: int = 5, new_tokens: int = 128) -> None:
    """3. Our standard lane against model.generate on the same model, greedy."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=151_936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True,
                         max_position_embeddings=4096, use_sliding_window=False, bos_token_id=0, eos_token_id=1)
    model = Qwen2ForCausalLM(config).to(DEVICE, torch.bfloat16).eval()
    ids = torch.randint(2, 1000, (1, 64), generator=torch.Generator().manual_seed(1)).tolist()[0]
    clock, lane = Clock(DEVICE), CachedModel(model)

    def ours() -> tuple[float, list[int]]:
        start = clock.now()
        tokens = [e.token for e in standard_decode(lane, ids, Sampling(), new_tokens, ())]
        return clock.now() - start, tokens

    def generate() -> tuple[float, list[int]]:
        inputs = torch.tensor([ids], device=DEVICE)
        start = clock.now()
        out = model.generate(inputs, attention_mask=torch.ones_like(inputs), do_sample=False,
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens, pad_token_id=1)
        return clock.now() - start, out[0, len(ids):].tolist()

    times = {"ours": [], "generate": []}
    outputs = {}
    for run in range(repeats + 1):  # the first of each is the warm-up
        for name, lane_run in (("ours", ours), ("generate", generate)) if run % 2 else (("generate", generate), ("ours", ours)):
            seconds, outputs[name] = lane_run()
            if run:
                times[name].append(seconds)
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"     {torch.cuda.get_device_name(DEVICE)}, random Qwen2.5-0.5B-shaped model, bf16, {new_tokens} tokens, "
          f"median of {repeats}: ours {med['ours']:.3f} s ({min(times['ours']):.3f}-{max(times['ours']):.3f}), "
          f"generate {med['generate']:.3f} s ({min(times['generate']):.3f}-{max(times['generate']):.3f})")
    check(outputs["ours"] == outputs["generate"], "standard lane: the same tokens as model.generate")
    check(med["ours"] <= med["generate"] * 1.02, f"standard lane {new_tokens / med['ours']:.1f} tok/s, "
          f"model.generate {new_tokens / med['generate']:.1f} tok/s (ours at most 2% slower)")


def assisted_peer() -> None:
    """4. transformers' assisted generation with its defaults, through the bench's own peer code."""
    from specdec.bench.spec_bench_run import _peer_turn

    tokenizer = word_tokenizer(len(WORDS), WORDS)
    target = tiny_model("qwen2", seed=7, vocab=len(WORDS), layers=4, hidden=128)
    draft = perturbed(target, 0.03)
    on = lambda model, name: Loaded(name, model.to(DEVICE), tokenizer, DEVICE, torch.float32)  # noqa: E731
    pair = Pair(on(target, "target"), on(draft, "draft"))
    request = Request(PROMPTS[0], 40, raw=True)
    ids = pair.prompt_ids(request)
    standard = [e.token for e in pair.standard(request, ids)]
    result, tokens = _peer_turn(pair, request, ids, Clock(DEVICE))
    check(tokens == standard, f"transformers assisted (defaults): the standard lane's tokens, "
                              f"{result['accept_lengths'][0]:.1f} tokens a target pass")


def cli_on_device() -> None:
    """5. `python -m specdec generate` on saved folders, the device and dtype left to the loader."""
    import json
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from helpers import make_pair_folders

    root = Path(tempfile.mkdtemp())
    folders = make_pair_folders(root)
    env = dict(os.environ, SPECDEC_COSTS=str(root / "costs"))
    for extra in (["--drafter", "draft-model", "--k", "4"], ["--auto"]):
        command = [sys.executable, "-m", "specdec", "generate", "--target", folders["target"], "--draft",
                   folders["draft"], *extra, "--prompt", "the cat sat on the mat", "--max-new-tokens", "40", "--json"]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode:
            check(False, f"generate {' '.join(extra)}: exit {done.returncode}: {done.stderr[-400:]}")
            continue
        stats, log = json.loads(done.stdout)["stats"], done.stderr
        picked = f"(torch.bfloat16, {DEVICE.type})" in log and "int8" not in log
        check(stats["identical"] and stats["alpha"] > 0 and picked,
              f"CLI generate {' '.join(extra)}: bf16 on {DEVICE.type} chosen by the loader, no int8, "
              f"identical lanes, alpha {stats['alpha']:.2f} over {stats['rounds']} rounds")
    check(any((root / "costs").glob("*.json")), "CLI --auto: the learned costs persisted per pair and device")


if __name__ == "__main__":
    import transformers

    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}, device {DEVICE}"
          + (f" ({torch.cuda.get_device_name(DEVICE)})" if DEVICE.type == "cuda" else ""), flush=True)
    for dtype in (torch.float32, torch.bfloat16):
        greedy_identity(dtype)
    for name in ("draft-model", "draft-tree"):
        sampled_exactness(name)
    assisted_peer()
    if DEVICE.type == "cuda":
        standard_against_generate()
        cli_on_device()
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)
