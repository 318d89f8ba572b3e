"""Token trees, sampled acceptance: exact for the target, checked by enumerating every draft tree
and every accept/reject outcome on a tiny vocabulary, then by Monte Carlo, with wrong q rules shown
to fail."""
import itertools

import pytest
import torch

from specdec.engine.sampling import sample_from
from specdec.engine.tree_verify import Tree, accept_sampled
from specdec.engine.verify import residual


pytestmark = pytest.mark.usefixtures("one_thread")


# --- sampled acceptance, exactly -----------------------------------------------------------------
#
# A draft tree of shape (m1, m2): m1 children of the root, m2 children under each. Every tree the
# draft can draw is enumerated with its probability; for each, every accept/reject outcome with its
# exact probability (accepting x with probability min(1, r(x)/q(x)) is a threshold on a uniform, so
# a uniform inside the accept or reject interval realises each branch), and every final token by
# the cells the final distribution cuts [0, 1) into. accept_sampled is called on each, and the
# emitted tokens, continued by the target itself, must have the target's distribution.

V = 3


def tables(seed: int, v: int, zeros_p: bool, zeros_q: bool, floor: float = 0.05):
    """Target p(.|prefix) for prefixes up to 2 tokens and draft q(.|prefix) up to 1 token."""
    g = torch.Generator().manual_seed(seed)
    p, q = {}, {}
    for table, longest, zeros in ((p, 2, zeros_p), (q, 1, zeros_q)):
        for length in range(longest + 1):
            for prefix in itertools.product(range(v), repeat=length):
                row = torch.rand(v, generator=g, dtype=torch.float64) + floor
                if zeros and torch.rand(1, generator=g).item() < 0.5:
                    row[torch.randint(v, (1,), generator=g)] = 0.0  # a token that side never picks
                table[prefix] = row / row.sum()
    return p, q


def sibling_draws(q: torch.Tensor, m: int, draws: str) -> list[tuple[tuple[int, ...], float]]:
    """Every ordered sibling group of m tokens the draft can draw from q, with its probability."""
    if draws == "top":
        return [(tuple(sorted(range(len(q)), key=lambda t: (-q[t].item(), t))[:m]), 1.0)]
    groups = []
    for group in itertools.product(range(len(q)), repeat=m):
        if draws == "without-replacement" and len(set(group)) < m:
            continue
        weight, left = 1.0, q.clone()
        for token in group:
            weight *= (left[token] / left.sum()).item()
            if draws == "without-replacement":
                left[token] = 0.0
        if weight > 0:
            groups.append((group, weight))
    return groups


def drafted_trees(q, shape: tuple[int, int], draws: str, verify_as: str, told=None) -> list[tuple[Tree, float]]:
    """Every tree the draft draws from q (root children, then each one's children, in draw order),
    with its probability. accept_sampled is told `verify_as` draws from `told` (default: q): the
    truth, or a wrong rule to show the test's power."""
    m1, m2 = shape
    told = q if told is None else told
    trees = []
    for first, w1 in sibling_draws(q[()], m1, draws):
        for seconds in itertools.product(*[sibling_draws(q[(x,)], m2, draws) for x in first]):
            tokens, parents, rows, weight = list(first), [-1] * m1, [told[()]] * m1, w1
            for i, (group, w2) in enumerate(seconds):
                tokens += group
                parents += [i] * m2
                rows += [told[(first[i],)]] * m2
                weight *= w2
            qs = None if verify_as == "top" else torch.stack(rows)
            trees.append((Tree(tuple(tokens), tuple(parents), qs, verify_as), weight))
    return trees


def target_rows(tree: Tree, p) -> torch.Tensor:
    return torch.stack([p[tuple(tree.tokens[i] for i in tree.path(node))] for node in range(-1, len(tree))])


def proposal(tree: Tree, node: int, tried: list[int], v: int) -> torch.Tensor:
    """The test's own statement of q_i: what the rule assumes node's token was drawn from."""
    if tree.draws == "top":
        return torch.nn.functional.one_hot(torch.tensor(tree.tokens[node]), v).double()
    q = tree.q[node].clone()
    if tree.draws == "without-replacement":
        q[tried] = 0.0
        q = q / q.sum()
    return q


def outcomes(tree: Tree, p_rows: torch.Tensor):
    """(probability, accept uniforms, final distribution, accepted path) of every accept/reject
    outcome of the rule on this tree."""
    found = []

    def visit(node, weight, us, path):
        r, tried = p_rows[node + 1], []
        for child in tree.children(node):
            x = tree.tokens[child]
            if tree.draws == "top" and x in tried:
                continue
            q = proposal(tree, child, tried, len(r))
            t = min(1.0, (r[x] / q[x]).item()) if q[x] > 0 else float(r[x] > 0)
            if t > 0:  # accept: any u < t
                visit(child, weight * t, {**us, child: t / 2}, path + [child])
            if t == 1:
                return
            weight, us = weight * (1 - t), {**us, child: (1 + t) / 2}  # reject: any u >= t
            r, tried = residual(r, q), tried + [x]
        found.append((weight, us, r, path))

    visit(-1, 1.0, {}, [])
    return found


def cells(dist: torch.Tensor):
    """Midpoints and lengths of the intervals of [0, 1) on which an inverse-CDF draw is constant."""
    cdf = (dist.cumsum(0) / dist.sum()).tolist()
    edges = sorted({0.0, 1.0, *[c for c in cdf if 0.0 < c < 1.0]})
    return [((a + b) / 2, b - a) for a, b in zip(edges, edges[1:])]


def emitted_distribution(trees: list[tuple[Tree, float]], p) -> dict[tuple[int, ...], float]:
    out: dict[tuple[int, ...], float] = {}
    for tree, w_tree in trees:
        p_rows = target_rows(tree, p)
        for w, us, r, path in outcomes(tree, p_rows):
            u_accept = [us.get(node, 0.5) for node in range(len(tree))]  # untried nodes: any value
            for u_final, length in cells(r):
                verdict = accept_sampled(tree, p_rows, u_accept, u_final)
                assert verdict.path == tuple(path)  # the rule took the branch the test integrates
                emitted = tuple(tree.tokens[i] for i in path) + (verdict.token,)
                out[emitted] = out.get(emitted, 0.0) + w_tree * w * length
    return out


def worst_error(emitted, p, v: int, length: int = 3) -> float:
    """Continue each emitted prefix with the target up to `length` tokens: the round is exact iff
    every sequence then has the target's probability."""
    assert abs(sum(emitted.values()) - 1.0) < 1e-12

    def target(seq, start=0):
        prob = 1.0
        for i in range(start, len(seq)):
            prob *= p[seq[:i]][seq[i]].item()
        return prob

    worst = 0.0
    for seq in itertools.product(range(v), repeat=length):
        spec = sum(emitted.get(seq[:m], 0.0) * target(seq, m) for m in range(1, length + 1))
        worst = max(worst, abs(spec - target(seq)))
    return worst


@pytest.mark.parametrize("draws,shape,seed,zeros_p,zeros_q", [
    ("iid", (2, 2), 0, False, False),
    ("iid", (3, 1), 1, True, True),
    ("without-replacement", (2, 2), 2, False, False),
    ("without-replacement", (3, 1), 3, True, False),  # all of V tried at the root: empty residual
    ("top", (2, 2), 4, True, True),
    ("top", (3, 1), 5, False, False),
    ("top", (1, 0), 6, False, False),  # a chain of one: plain speculative decoding, greedy draft
])
def test_accept_sampled_reproduces_the_target_exactly(draws, shape, seed, zeros_p, zeros_q):
    p, q = tables(seed, V, zeros_p, zeros_q)
    trees = drafted_trees(q, shape, draws, verify_as=draws)
    assert abs(sum(w for _, w in trees) - 1.0) < 1e-12
    assert worst_error(emitted_distribution(trees, p), p, V) < 1e-9


def test_repeated_deterministic_siblings_stay_exact():
    """A "top" tree may propose a token twice (two drafters, one token); the repeat is skipped."""
    p, _ = tables(7, V, True, False)
    tree = Tree((1, 1, 2, 0, 0), (-1, -1, -1, 0, 0))
    assert worst_error(emitted_distribution([(tree, 1.0)], p), p, V) < 1e-9


def test_the_one_hot_rule_is_exact_for_any_draft_but_accepts_less():
    """Told "top" (q one-hot), the rule accepts x with probability r(x) and otherwise drops x from
    r: exact for any proposed x, so for sampled siblings too, whatever they were drawn from. The
    true q is worth keeping only for acceptance: sum min(r, q) >= sum r * q."""
    p, q = tables(8, V, False, False)
    for draws in ("iid", "without-replacement"):
        one_hot = emitted_distribution(drafted_trees(q, (2, 1), draws, "top"), p)
        true_q = emitted_distribution(drafted_trees(q, (2, 1), draws, draws), p)
        assert worst_error(one_hot, p, V) < 1e-9
        accepted = [sum(w for emitted, w in dist.items() if len(emitted) > 1) for dist in (one_hot, true_q)]
        assert accepted[0] < accepted[1] - 0.01, (draws, accepted)


def sharpened(q):
    """q as it would be before a temperature of 1/2 was applied: not what was sampled from."""
    return {prefix: row**2 / (row**2).sum() for prefix, row in q.items()}


@pytest.mark.parametrize("draws,verify_as,wrong_q,seed", [
    ("without-replacement", "iid", False, 12),  # q_i = q, ignoring the siblings already drawn
    ("top", "iid", False, 8),  # the draft's softmax q for deterministic top-k siblings (EAGLE #110)
    ("iid", "iid", True, 8),  # a q other than the one sampled from (processed differently)
])
def test_a_wrong_q_is_caught(draws, verify_as, wrong_q, seed):
    """The enumeration has power: each wrong q_i moves the output off the target."""
    p, q = tables(seed, V, False, False)
    trees = drafted_trees(q, (2, 2), draws, verify_as, told=sharpened(q) if wrong_q else None)
    assert worst_error(emitted_distribution(trees, p), p, V) > 1e-3


# --- sampled acceptance, by Monte Carlo ----------------------------------------------------------

MC_V, MC_DRAWS = 5, 20_000
CHI2_999_DF24 = 51.179  # chi-square quantile 0.999 for 24 degrees of freedom (25 two-token cells)


def sample_group(q: list[float], m: int, draws: str, us: list[float]) -> list[int]:
    """m siblings drawn from q by inverse CDF (plain Python: this loop runs 20,000 times)."""
    if draws == "top":
        return sorted(range(len(q)), key=lambda t: -q[t])[:m]
    group, left = [], list(q)
    for u in us[:m]:
        target, total, token = u * sum(left), 0.0, len(left) - 1
        for t, mass in enumerate(left):
            total += mass
            if target < total:
                token = t
                break
        group.append(token)
        if draws == "without-replacement":
            left[token] = 0.0
    return group


def monte_carlo_chi2(draws: str, verify_as: str, seed: int, n: int = MC_DRAWS) -> float:
    """Draw a (2, 2) tree, verify it, and take the first two emitted tokens (the second from the
    target when the round emitted one); chi-square of their counts against p(a) p(b|a). The draft
    is sharper than the target (floor 0.02 against 0.3), so rejections and later siblings matter."""
    p, _ = tables(seed, MC_V, False, False, floor=0.3)
    _, q = tables(seed + 1, MC_V, False, False, floor=0.02)
    q_lists = {prefix: row.tolist() for prefix, row in q.items()}
    g = torch.Generator().manual_seed(seed)
    us = torch.rand(n, 14, generator=g, dtype=torch.float64).tolist()
    counts = torch.zeros(MC_V, MC_V)
    for u in us:
        first = sample_group(q_lists[()], 2, draws, u[0:2])
        tokens, parents, rows = list(first), [-1, -1], [q[()]] * 2
        for i, x in enumerate(first):
            tokens += sample_group(q_lists[(x,)], 2, draws, u[2 + 2 * i: 4 + 2 * i])
            parents += [i, i]
            rows += [q[(x,)]] * 2
        tree = Tree(tuple(tokens), tuple(parents), None if verify_as == "top" else torch.stack(rows), verify_as)
        path, token = accept_sampled(tree, target_rows(tree, p), u[6:12], u[12])
        emitted = [tree.tokens[i] for i in path] + [token]
        if len(emitted) == 1:
            emitted.append(sample_from(p[(token,)], u[13]))
        counts[emitted[0], emitted[1]] += 1
    expected = torch.stack([p[()][a] * p[(a,)] for a in range(MC_V)]).float() * n
    return ((counts - expected) ** 2 / expected).sum().item()


def test_monte_carlo_matches_the_target():
    assert monte_carlo_chi2("without-replacement", "without-replacement", seed=12) < CHI2_999_DF24


@pytest.mark.parametrize("draws,n", [("without-replacement", MC_DRAWS), ("top", MC_DRAWS // 10)])
def test_monte_carlo_catches_a_wrong_q(draws, n):
    """Verified as iid: q_i = q for siblings drawn without replacement (a bias of a few percent:
    chi-square ~90 at 20,000 draws), and the draft's softmax q for top-k siblings (gross: ~9,000
    at 2,000 draws). Both fail."""
    assert monte_carlo_chi2(draws, "iid", seed=12, n=n) > CHI2_999_DF24
