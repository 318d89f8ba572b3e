"""Seeded end-to-end check: speculative sampling draws from the target's distribution.

Thousands of seeded runs on a tiny-vocabulary model; the first two tokens are compared with the
target's exact joint distribution by a chi-square test. Seeds are fixed, so the test is
deterministic; the same statistic against the draft's distribution shows the test has power.
"""
import pytest
import torch

from chi_square import chi_square, critical, joint as exact_joint
from helpers import perturbed, tiny_model
from specdec import CachedModel, ModelDrafter, PromptLookupDrafter, Sampling, Speculation, speculative_decode
from specdec.engine.drafters import HybridDrafter
from specdec.engine.policy import Choice
from specdec.engine.sources import Source

VOCAB, RUNS = 8, 2000
PROMPT = [3, 5, 7, 3, 5, 6, 4, 3, 5]  # ends in a repeated bigram, so prompt lookup drafts


SCRIPTS = [[(0, 0), (2, 0), (2, 1)], [(2, 1), (0, 1), (3, 0)], [(1, 0), (3, 1)], [(3, 0), (1, 1)]]


class Scripted:
    """Replays (k, index into the drafter's sources) choices, whatever the rounds show."""

    name = "scripted"

    def __init__(self, script):
        self.script = iter(script + [(1, 0)] * 8)

    def choose(self, sources):
        k, which = next(self.script)
        return Choice(k, sources[min(which, len(sources) - 1)])

    def observe(self, round, source):
        pass


def joint(model, sampling, prompt=PROMPT, vocab=VOCAB):
    return exact_joint(model, sampling, prompt, vocab)


@pytest.mark.parametrize("sampling,drafter_kind", [
    (Sampling(temperature=1.0), "model"),
    (Sampling(temperature=0.8, top_k=6, top_p=0.9), "model"),
    (Sampling(temperature=1.0), "lookup"),
    (Sampling(temperature=0.9, top_p=0.95), "hybrid"),
])
def test_speculative_sampling_matches_target(sampling, drafter_kind):
    target = tiny_model("llama", seed=21, vocab=VOCAB, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    lane = CachedModel(target)
    drafter = {"model": lambda: ModelDrafter(draft, VOCAB), "lookup": PromptLookupDrafter,
               "hybrid": lambda: HybridDrafter(ModelDrafter(draft, VOCAB))}[drafter_kind]()
    counts = torch.zeros(VOCAB, VOCAB)
    accepted = rejected = plain = 0
    sources = set()
    for seed in range(RUNS):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        # The hybrid runs under scripted policies: k = 0 rounds and switches between its sources,
        # chosen before each round's draws, as any policy must. Each script is an exact sampler,
        # so their mixture over seeds must be too.
        policy = Scripted(SCRIPTS[seed % len(SCRIPTS)]) if drafter_kind == "hybrid" else None
        rounds = list(speculative_decode(lane, drafter, PROMPT, Speculation(k=2), s, 3, policy=policy))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        accepted += sum(r.accepted for r in rounds)
        rejected += sum(r.accepted < len(r.drafted) for r in rounds)
        plain += sum(not r.drafted for r in rounds)
        sources |= {r.source for r in rounds if r.source}
    assert accepted > RUNS // 20 and rejected > RUNS // 20  # both branches of the rule ran often
    if drafter_kind == "hybrid":
        assert {Source(s).drafter for s in sources} == {"draft-model", "prompt-lookup"} and plain > RUNS // 20
    stat, dof = chi_square(counts, joint(target, sampling), RUNS)
    assert stat < critical(dof), (stat, dof)
    if drafter_kind != "lookup":
        wrong, wrong_dof = chi_square(counts, joint(draft, sampling), RUNS)
        assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"
