"""The accept rule, checked exactly: enumerate every draft, every accept/reject outcome and every
final draw over a tiny vocabulary, and compare the output distribution with the target's."""
import itertools

import pytest
import torch

from specdec.engine.verify import Verdict, acceptance, residual, verify_greedy, verify_sampled

V = 3


def tables(seed: int, k: int, zeros: bool):
    """Hand-made conditional distributions p(.|prefix), q(.|prefix) for every prefix up to k + 1."""
    g = torch.Generator().manual_seed(seed)
    p, q = {}, {}
    for length in range(k + 2):
        for prefix in itertools.product(range(V), repeat=length):
            for table in (p, q):
                row = torch.rand(V, generator=g, dtype=torch.float64) + 0.05
                if zeros and torch.rand(1, generator=g).item() < 0.4:
                    row[torch.randint(V, (1,), generator=g)] = 0.0  # tokens one side never picks
                table[prefix] = row / row.sum()
    return p, q


def cells(breakpoints):
    """Midpoints and lengths of the intervals [0,1) is cut into by the breakpoints."""
    edges = sorted({0.0, 1.0, *[b for b in breakpoints if 0.0 < b < 1.0]})
    return [((a + b) / 2, b - a) for a, b in zip(edges, edges[1:])]


def round_distribution(p, q, k):
    """Exact distribution of the tokens one verification round emits, by enumeration."""
    out = {}
    for drafts in itertools.product(range(V), repeat=k):
        prefixes = [drafts[:i] for i in range(k + 1)]
        weight = 1.0
        for i in range(k):
            weight *= q[prefixes[i]][drafts[i]].item()
        if weight == 0:
            continue
        p_rows = torch.stack([p[x] for x in prefixes])
        q_rows = torch.stack([q[x] for x in prefixes[:k]])
        # The rule is piecewise constant in its uniforms; these breakpoints cover every piece.
        accept_cells = [cells([(p_rows[i, d] / q_rows[i, d]).item()]) for i, d in enumerate(drafts)]
        finals = [p_rows[k]] + [torch.clamp(p_rows[i] - q_rows[i], min=0) for i in range(k)]
        final_cells = cells([c.item() for f in finals if f.sum() > 0 for c in (f.cumsum(0) / f.sum())])
        for us in itertools.product(*accept_cells):
            w_accept = weight
            for _, length in us:
                w_accept *= length
            for u_final, length in final_cells:
                v = verify_sampled(torch.tensor(drafts), p_rows, q_rows, [u for u, _ in us], u_final)
                emitted = drafts[: v.accepted] + (v.token,)
                out[emitted] = out.get(emitted, 0.0) + w_accept * length
    return out


@pytest.mark.parametrize("k,seed,zeros", [(1, 0, False), (2, 1, False), (2, 2, True), (3, 3, True)])
def test_accept_rule_reproduces_target_distribution_exactly(k, seed, zeros):
    p, q = tables(seed, k, zeros)
    emitted = round_distribution(p, q, k)
    assert abs(sum(emitted.values()) - 1.0) < 1e-12
    # Continue each emitted prefix with the target itself up to k + 1 tokens: speculative decoding
    # is exact iff every full sequence then has the target's probability.
    worst = 0.0
    for sequence in itertools.product(range(V), repeat=k + 1):
        target = 1.0
        for i in range(k + 1):
            target *= p[sequence[:i]][sequence[i]].item()
        spec = 0.0
        for m in range(1, k + 2):
            head = sequence[:m]
            tail = 1.0
            for i in range(m, k + 1):
                tail *= p[sequence[:i]][sequence[i]].item()
            spec += emitted.get(head, 0.0) * tail
        worst = max(worst, abs(spec - target))
    assert worst < 1e-9


def test_wrong_residual_is_caught():
    """The enumeration has power: sampling the correction from p instead of max(p - q, 0) breaks it."""
    p, q = tables(5, 1, False)
    drafts_q = q[()]
    first = {}
    for d in range(V):
        ratio = min(1.0, (p[()][d] / drafts_q[d]).item())
        first[d] = first.get(d, 0.0) + drafts_q[d].item() * ratio
        for y in range(V):  # the buggy rule: resample from p after a rejection
            first[y] = first.get(y, 0.0) + drafts_q[d].item() * (1 - ratio) * p[()][y].item()
    assert max(abs(first[y] - p[()][y].item()) for y in range(V)) > 1e-3


def test_greedy_rule():
    assert verify_greedy([5, 6, 7], [5, 6, 9, 4]) == Verdict(2, 9)
    assert verify_greedy([5, 6, 7], [5, 6, 7, 4]) == Verdict(3, 4)
    assert verify_greedy([5, 6, 7], [1, 6, 7, 4]) == Verdict(0, 1)
    assert verify_greedy([], [8]) == Verdict(0, 8)


def test_rejected_token_is_never_the_correction():
    p = torch.tensor([[0.1, 0.6, 0.3], [0.2, 0.2, 0.6]], dtype=torch.float64)
    q = torch.tensor([[0.8, 0.1, 0.1]], dtype=torch.float64)
    for u_final in torch.linspace(0, 0.999, 50).tolist():
        v = verify_sampled(torch.tensor([0]), p, q, [0.99], u_final)
        assert v.accepted == 0 and v.token != 0


def test_token_with_zero_target_mass_is_never_accepted():
    p = torch.tensor([[0.0, 0.5, 0.5], [1 / 3] * 3], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    assert verify_sampled(torch.tensor([0]), p, q, [0.0], 0.5).accepted == 0


def test_all_accepted_draws_bonus_from_last_target_row():
    p = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    q = torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)
    assert verify_sampled(torch.tensor([1]), p, q, [0.7], 0.3) == Verdict(1, 2)


def test_residual_and_acceptance():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.6, 0.2], dtype=torch.float64)
    assert torch.allclose(residual(p, q), torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    assert abs(acceptance(p, q).item() - 0.7) < 1e-12
    assert torch.equal(residual(p, p), p)  # no residual mass: fall back to p
