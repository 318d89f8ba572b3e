"""Standard and speculative decoding as generators of plain events.

Each generator owns its timing: it reads a synchronized clock around its own device work only, so a
caller may interleave two lanes (or render a UI between events) without that time being counted.
"""
from __future__ import annotations

from typing import Iterable, Iterator

import torch

from .config import Sampling, Speculation
from .drafters import Draft, Drafter
from .events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent, TokenEvent, TreeRound
from .kvcache import CachedModel
from .policy import Policy, make_policy
from .sampling import make_generator, probs_from_logits, sample_from, uniforms
from .timing import Clock
from .tree_verify import ROOT, Tree, accept_greedy, accept_sampled
from .verify import Verdict, acceptance, verify_greedy, verify_sampled


def check_budget(max_new_tokens: int) -> None:
    if not (isinstance(max_new_tokens, int) and max_new_tokens >= 1):
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")


def standard_decode(
    target: CachedModel,
    prompt_ids: list[int],
    sampling: Sampling,
    max_new_tokens: int,
    eos_ids: Iterable[int] = (),
) -> Iterator[TokenEvent]:
    """Plain KV-cached autoregressive decoding, one target forward per token."""
    check_budget(max_new_tokens)
    eos, clock = set(eos_ids), Clock(target.device)
    generator = make_generator(sampling.seed, target.device)
    target.reset()
    ids = list(prompt_ids)
    for index in range(max_new_tokens):
        start = clock.now()
        logits = target.logits(ids, 1)[0]
        if sampling.greedy:
            token = int(logits.argmax())
        else:
            token = sample_from(probs_from_logits(logits, sampling), uniforms(1, generator)[0])
        seconds = clock.now() - start
        ids.append(token)
        finished = token in eos or index + 1 == max_new_tokens
        yield TokenEvent(index, token, seconds, finished)
        if finished:
            return


def speculative_decode(
    target: CachedModel,
    drafter: Drafter,
    prompt_ids: list[int],
    spec: Speculation,
    sampling: Sampling,
    max_new_tokens: int,
    eos_ids: Iterable[int] = (),
    policy: Policy | None = None,
) -> Iterator[RoundEvent]:
    """Each round the policy picks k (and, for a hybrid drafter, the source) from earlier rounds
    only; the drafter proposes up to k tokens; the target verifies them with the last committed
    token in one pass; the accepted prefix plus one target token is kept. A round adds between 1 and
    k + 1 tokens, and a round with k = 0 is one plain decode step. Because k never depends on the
    current round's draws, every round is an exact draw from the target (see verify.py). A tree
    drafter proposes a tree of depth k instead, verified in one pass too, and the round keeps its
    accepted path (tree_verify.py)."""
    check_budget(max_new_tokens)
    eos, clock = set(eos_ids), Clock(target.device)
    generator = make_generator(sampling.seed, target.device)
    policy = policy or make_policy(spec.policy, spec.k, spec.k_max)
    target.reset()
    drafter.reset()
    # A drafter that learns from the target's passes (token recycling) is shown each pass's logits.
    observe = getattr(drafter, "observe", None)
    # A policy that learns from what free sources would have drafted (the cost policy) is shown that.
    free_drafts = getattr(drafter, "free_drafts", None) if getattr(policy, "wants_free_drafts", False) else None
    ids, produced, round_index = list(prompt_ids), 0, 0
    while True:
        # 1. Choose k and the source from earlier rounds only (timed: choosing is part of the lane's cost).
        start = clock.now()
        offered = drafter.sources(ids)
        choice = policy.choose(offered)
        # A round yields at most drafted + 1 tokens: never draft what max_new_tokens cannot take.
        k_round = min(choice.k, max_new_tokens - produced - 1)
        # What the free sources not chosen would have drafted, for the policy to judge against this
        # round's tokens (CostModel.observe_free): a per-round cost of choosing, so timed as such.
        free = {} if free_drafts is None or max_new_tokens - produced < 2 else \
            free_drafts(ids, max(k_round, spec.k), choice.source if k_round > 0 else None, offered)
        chosen_at = clock.now()
        # 2. Draft. A stop rule (the cost policy's, for a model source) goes to token-by-token drafters.
        stop = {"stop": choice.stop} if choice.stop is not None else {}
        draft = drafter.propose(ids, k_round, sampling, generator, choice.source, **stop) if k_round > 0 else NO_DRAFT
        draft = draft.through_eos(eos)  # a copy of the prompt's turn end, say: nothing after it is kept
        drafted_at = clock.now()
        # 3. Verify: one target pass over the last committed token and the chain (or tree), then the
        #    accept/reject rule (verify.py, tree_verify.py): the accepted path and one target token.
        if draft.tree is None:
            logits = target.logits(ids + draft.tokens, len(draft.tokens) + 1)
            verdict, p = _verify(logits, draft, sampling, generator)
            path = tuple(range(verdict.accepted))  # a chain: node i is the child of node i - 1
        else:
            logits = target.verify_tree(ids, draft.tree)
            path, token = _verify_tree(logits, draft.tree, sampling, generator)
            verdict, p = Verdict(len(path), token), None
        verified_at = clock.now()
        # 4. Let a learning drafter read the pass (token recycling), counted as drafting.
        if observe is not None:  # the rows the pass read: the last committed token, then the draft's
            fed, before = _read(ids, draft)
            observe(fed, logits, before)
        recycled = clock.now() - verified_at  # the drafter's work, so counted as drafting
        # instrumentation, measured but off the clock; per-position acceptance is a chain's notion
        alpha = _acceptance(logits, p, draft) if draft.tree is None else ()

        # 5. Commit the accepted tokens and the target's one (cut at EOS and the budget); the caches
        #    roll back to this prefix on their next call (kvcache.py).
        tokens, fates = _round_tokens(draft, path, verdict.token)
        tokens, fates = _truncate(tokens, fates, eos, max_new_tokens - produced)
        ids += tokens
        produced += len(tokens)
        finished = produced >= max_new_tokens or tokens[-1] in eos
        event = RoundEvent(
            round=round_index,
            k=k_round,
            drafted=tuple(draft.tokens),
            accepted=verdict.accepted,
            tokens=tuple(tokens),
            fates=tuple(fates),
            draft_seconds=drafted_at - start + recycled,
            verify_seconds=verified_at - drafted_at,
            alpha=alpha,
            finished=finished,
            source=str(choice.source) if draft.tokens else "",  # a plain str: events become JSON (orjson
            # refuses str subclasses as keys, and the stats count rounds by source)
            gain=choice.gain,
            reason=choice.reason,
            policy_seconds=chosen_at - start,
            catch_up=draft.catch_up,
            tree=None if draft.tree is None else TreeRound(draft.tree.tokens, draft.tree.parents, path, draft.reach,
                                                                draft.origins, draft.nested, draft.chain),
            confidences=draft.confidences,
            budget_cut=k_round < choice.k,
        )
        # 6. Report the round, and let the policy learn from it (and from what the free sources would
        #    have drafted, judged against its tokens) for the next. A round that goes on has all of its
        #    tokens: only the last can be cut by EOS or the budget.
        yield event
        if finished:
            return
        policy.observe(event, choice.source, **({"free": free} if free else {}))
        round_index += 1


NO_DRAFT = Draft([], None)


def _read(ids: list[int], draft: Draft) -> tuple[list[int], list[int]]:
    """The tokens a verify pass read, one per logits row (the last committed token, then the draft's
    nodes), and the token read just before each in its own path: the one before the last committed
    token, a chain node's predecessor, a tree node's parent (-1 where there is none)."""
    fed = [ids[-1]] + list(draft.tokens)
    parents = range(-1, len(draft.tokens) - 1) if draft.tree is None else draft.tree.parents
    return fed, [ids[-2] if len(ids) > 1 else -1] + [fed[parent + 1] for parent in parents]


def _verify(
    logits: torch.Tensor, draft: Draft, sampling: Sampling, generator: torch.Generator
) -> tuple[Verdict, torch.Tensor | None]:
    """Apply the accept rule; also returns the target distributions p when sampling computed them."""
    n = len(draft.tokens)
    if sampling.greedy:
        return verify_greedy(draft.tokens, logits.argmax(-1).tolist()), None
    p = probs_from_logits(logits, sampling)
    drafts = torch.tensor(draft.tokens, dtype=torch.long, device=logits.device)
    u = uniforms(n + 1, generator)
    return verify_sampled(drafts, p, _q(draft, drafts, p.shape[-1], p.device), u[:n], u[n]), p


def _acceptance(logits: torch.Tensor, p: torch.Tensor | None, draft: Draft) -> tuple[float, ...]:
    """The analytic acceptance sum_x min(p, q) of each drafted position. A greedy run's p and q are
    one-hot, so there both are taken at temperature 1: how much the two models' distributions
    overlap, which is what a sampler would accept."""
    n = len(draft.tokens)
    if n == 0:
        return ()
    p = torch.softmax(logits[:n].float(), -1) if p is None else p[:n]
    if draft.logits is not None:  # a greedy model draft
        q = torch.softmax(draft.logits.float(), -1).to(p.device)
    else:
        drafts = torch.tensor(draft.tokens, dtype=torch.long, device=p.device)
        q = _q(draft, drafts, p.shape[-1], p.device)
    return tuple(acceptance(p, q).tolist())


def _q(draft: Draft, drafts: torch.Tensor, vocab_size: int, device: torch.device) -> torch.Tensor:
    if draft.q is not None:
        return draft.q.to(device)
    return torch.nn.functional.one_hot(drafts, vocab_size).float()


def _verify_tree(logits: torch.Tensor, tree: Tree, sampling: Sampling,
                 generator: torch.Generator) -> tuple[tuple[int, ...], int]:
    """The accepted path and the target's token after it (tree_verify.py has the rule and its proof)."""
    if sampling.greedy:
        return accept_greedy(tree, logits.argmax(-1))
    u = uniforms(len(tree) + 1, generator)
    return accept_sampled(tree, probs_from_logits(logits, sampling), u[:-1], u[-1])


def _round_tokens(draft: Draft, path: tuple[int, ...], token: int) -> tuple[list[int], list[str]]:
    """The accepted path's tokens, then the target's own: BONUS where nothing drafted was left to
    try below the path's end (a chain accepted whole, a tree's leaf), else a correction."""
    tokens = [draft.tokens[node] for node in path] + [token]
    if not draft.tokens:
        return tokens, [PLAIN]  # nothing was drafted: the target's ordinary next token
    if draft.tree is None:
        full = len(path) == len(draft.tokens)
    else:
        full = not draft.tree.children(path[-1] if path else ROOT)
    return tokens, [ACCEPTED] * len(path) + [BONUS if full else CORRECTED]


def _truncate(tokens: list[int], fates: list[str], eos: set[int], room: int) -> tuple[list[int], list[str]]:
    """EOS inside an accepted run ends generation there; max_new_tokens is never exceeded."""
    cut = next((i + 1 for i, t in enumerate(tokens) if t in eos), len(tokens))
    cut = min(cut, room)
    return tokens[:cut], fates[:cut]
