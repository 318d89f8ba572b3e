"""Token recycling (Luo et al. 2024, "Turning Trash into Treasure: Accelerating Inference of Large
Language Models with Token Recycling"): drafting with no draft model, from the target's own past
guesses.

Every target pass computes a distribution over the next token at each position it reads, and a
speculative round keeps one of them: the others (the candidates after each drafted token, after the
rejected ones too) are thrown away. Token recycling keeps their top candidates instead, in an
adjacency table A of shape [vocab, b]: A[t] holds the b tokens the target last ranked highest right
after reading t. To draft, it follows the table from the last committed token: the root's row
gives its children, each child's row its own, up to TreeShape's budget nodes, `branching` children
per node and depth k, the likeliest first (the tree's shape, below). The tree is verified in one
target pass like any other (kvcache.py, tree_verify.py), and that pass's own logits refill the rows
of every token it read. Beside the table's candidates, the context offers its own (below).

The table is a bigram model the target keeps writing: after "import" it remembers what the target
expected last time it read "import", in whatever context. It needs no training and costs a top-b and
one scatter per pass, on the device the model is on. Beside it the same pass fills a second table
keyed by the token and the one before it (a trigram's context: "the" after "in" and "the" after
"of" get rows of their own), and a node grows from its two-token row where that exists, from its
one-token row otherwise: the back-off of an n-gram model, as Lookahead decoding's n-gram pool and
REST's datastore match the longest context they hold. On SmolLM2 and the Spec-Bench sample it
raised the tokens a pass of the 16-node tree commits from 1.87 to 1.97 (docs/spec-bench/notes.md).
The two-token table is a fixed number of hashed slots (PAIR_SLOTS, a prime), each holding its key,
so a collision overwrites an older row and never answers for another context.

The context. A bigram table cannot know that this answer copies its question: a translation repeats
names and numbers, a conversation its own earlier sentences, code the identifiers of the prompt.
So the node on the context's path also offers what followed the context's last n tokens (n = 3, 2,
1, the longest match first) the last time they occurred: prompt lookup's continuation (lookup.py),
one candidate a node, the context's next token under its previous one. Its hit rate is measured per
match length n the same way (ContextHits: the pass that reads the tree says whether the target
chose each context node's token after its parent), so where copying pays the tree runs deep along
the copy, and where it does not the copy gets a node or none. A candidate both offer is one node,
scored by the better rate; the tree view shows each node's origin (table, context or both).
Lookahead decoding and REST merge their n-gram pools with the context the same way. Before it, the
table alone ran SmolLM2's Spec-Bench translation at 0.90x our standard decoding where prompt lookup
ran 1.49x; with it, 1.26x (docs/spec-bench/notes.md).

Two cases. Where the last token never occurred before, the context offers nothing and the tree is
the table's alone; its acceptance there is the table's, not the blend of table and copied text the
policy sees elsewhere. So the sources name the case (sources.py): "recycling:8" where the context
has a candidate, "recycling/table:8" where it has none, and the cost policy learns each apart (as
it learns prompt lookup only where it has a match). Where this text's table rows miss, the policy
then decodes plainly in the rounds without a match, as prompt lookup does, instead of paying every
round for a tree that the rounds with a match made look good: on SmolLM2's Spec-Bench translation
the blended evidence drafted a table tree every round, each pass 2 ms wider than a plain step, for
no more tokens a pass than prompt lookup: 1.47x our standard decoding against prompt lookup's 1.56x.
With the cases apart, 1.58x against 1.54x (docs/spec-bench/notes.md).

The tree's shape. Before a pass overwrites a row, the row is scored against what the target now
says follows its token (the pass's argmax there): h_r = P(the row's rank-r candidate is the target's
next token), counted per rank over every row the passes read, decayed, and shrunk towards a prior
(RankHits). Under greedy verification a node of path ranks (r_1, ..., r_d) is accepted with
probability about h_{r_1} ... h_{r_d} (each step a fresh bigram guess), so the tree keeps the budget
nodes of highest path score, best first (EAGLE-2's rule, with the table's measured hit rates in
place of a draft model's probabilities): deep along the first candidates where they hit often,
wide near the root where they do not. A CPU target whose pass over 17 tokens costs two steps gets
the smaller budgets too (sources: 16, 8, 4, 2 for a budget of 16), and the cost policy picks.

Initialisation and lifetime. Rows start empty (-1: no candidate), so a row drafts nothing until the
target has read its token once in the speculative lane (a two-token row: the pair, in that order);
the prompt's prefill fills only its last position's rows (the rest of the prefill's logits are
never computed: the head runs on the last position only). Until then only the context offers
candidates. The table and the hit rates belong to the pair (Pair.recycling_table), not to a
request: they warm up over a session, and a second question drafts from what the first taught.
Only the speculative lane feeds them, inside its timed rounds (the update is counted as the
drafter's time); the standard lane never touches them.

Exactness. The tree is deterministic given the table, its hit rates and the committed ids, drawn in
the "top" mode (q one-hot on each child), so greedy and multi-candidate rejection acceptance are
exact for the target (tree_verify.py); what the table holds changes only how much is accepted, never
the output.
"""
from __future__ import annotations

import copy
import heapq
from dataclasses import dataclass

import torch

from ..config import Sampling, TreeShape
from ..sources import Source, budget_sources
from ..tree_verify import ROOT, Tree
from .options import DrafterOptions
from .base import Draft, DrafterBase
from .lookup import MAX_NGRAM, PromptLookupDrafter, latest_match

TABLE_ONLY = "table"  # the sources' case where the context has no candidate (module docstring)
ROW_WIDTH = 8  # candidates kept per token: the most any TreeShape.branching asks of a row here
PAIR_SLOTS = 262_139  # two-token rows kept (a prime below 2^18, so keys spread over the slots): 10 MB
NO_TOKEN = -1  # no previous token (the prompt's first), and an empty slot's key


class RankHits:
    """h_r: how often a row's rank-r candidate was the target's next token, decayed per pass read and
    shrunk towards PRIOR (weight PRIOR_WEIGHT rows) so an empty table still grows a sensible tree."""

    PRIOR = tuple(0.3 * 0.5 ** r for r in range(ROW_WIDTH))  # before evidence: the first candidate best
    PRIOR_WEIGHT = 4.0

    def __init__(self, width: int, decay: float = 0.99):
        self.decay = decay
        self.hits, self.rows = [0.0] * width, 0.0

    def observe(self, hits: list[float], rows: int) -> None:
        """hits[r]: rows read whose rank-r candidate was the target's next token, out of `rows`."""
        if rows:
            self.hits = [h * self.decay + new for h, new in zip(self.hits, hits)]
            self.rows = self.rows * self.decay + rows

    def rates(self) -> list[float]:
        prior = self.PRIOR + (self.PRIOR[-1],) * max(0, len(self.hits) - len(self.PRIOR))
        return [(h + p * self.PRIOR_WEIGHT) / (self.rows + self.PRIOR_WEIGHT) for h, p in zip(self.hits, prior)]


class ContextHits:
    """h_n: how often the context's candidate after a match of n tokens was the target's next token,
    decayed per test and shrunk towards PRIOR[n - 1] (weight PRIOR_WEIGHT tests)."""

    PRIOR = (0.2, 0.4, 0.5)  # a longer match is likelier copied text
    PRIOR_WEIGHT = 4.0

    def __init__(self, decay: float = 0.99):
        self.decay = decay
        self.hits, self.tests = [0.0] * len(self.PRIOR), [0.0] * len(self.PRIOR)

    def observe(self, match: int, hit: bool) -> None:
        self.hits[match - 1] = self.hits[match - 1] * self.decay + float(hit)
        self.tests[match - 1] = self.tests[match - 1] * self.decay + 1.0

    def rates(self) -> list[float]:
        return [(h + p * self.PRIOR_WEIGHT) / (t + self.PRIOR_WEIGHT)
                for h, t, p in zip(self.hits, self.tests, self.PRIOR)]


class AdjacencyTable:
    """A[t] = the target's top ROW_WIDTH next tokens after t, as last seen; -1 where never seen; and
    how often each rank has been right (RankHits)."""

    def __init__(self, vocab_size: int, device: torch.device | str = "cpu", width: int = ROW_WIDTH,
                 pair_slots: int = PAIR_SLOTS):
        self.rows = torch.full((vocab_size, width), -1, dtype=torch.int32, device=device)
        # The two-token rows: slot key % pair_slots holds the row of key = previous * vocab + token.
        self.pair_keys = torch.full((pair_slots,), NO_TOKEN, dtype=torch.long, device=device)
        self.pair_rows = torch.full((pair_slots, width), -1, dtype=torch.int32, device=device)
        self.hits = RankHits(width)
        # How often the context's candidate (what followed the last n tokens where they occurred
        # before, n = 1..MAX_NGRAM) was the target's next token, by n: index n - 1.
        self.context_hits = ContextHits()

    @property
    def width(self) -> int:
        return self.rows.shape[1]

    def update(self, tokens: list[int], logits: torch.Tensor, previous: list[int] | None = None) -> list[int]:
        """logits[i] is the target's next-token logits after reading tokens[i] (one pass's rows), and
        previous[i] the token read just before tokens[i] (NO_TOKEN: none; None: fill no two-token rows).
        Returns the target's top token after each (its argmax up to ties), read off the same top-k:
        on a CPU the top-k over the vocabulary is most of a round's bookkeeping, so nothing else
        scans the rows again."""
        if not tokens:
            return []
        top = logits[: len(tokens)].topk(min(self.width, logits.shape[-1]), dim=-1).indices.to(self.rows.device, torch.int32)
        index = torch.tensor(tokens, dtype=torch.long, device=self.rows.device)
        # Score the rows before they are overwritten: was rank r the target's next token? Rows never
        # filled hold -1 and are not counted. One transfer (a wait on a GPU): hits by rank, the rows
        # counted, then the target's next tokens.
        old, target_next = self.rows[index], top[:, :1]
        seen = (old[:, :1] >= 0).to(torch.int32)
        counts = torch.cat([((old == target_next) * seen).sum(dim=0), seen.sum(dim=0), top[:, 0].long()]).tolist()
        hits, rows, after = counts[: self.width], counts[self.width], counts[self.width + 1 :]
        self.hits.observe(hits, rows)
        self.rows[index, : top.shape[1]] = top
        if previous is not None:
            self._update_pairs(index, torch.tensor(previous, dtype=torch.long, device=self.rows.device), top)
        return after

    def _update_pairs(self, tokens: torch.Tensor, previous: torch.Tensor, top: torch.Tensor) -> None:
        known = previous >= 0
        keys = previous[known] * self.rows.shape[0] + tokens[known]
        slots = keys % self.pair_keys.shape[0]
        self.pair_keys[slots] = keys
        self.pair_rows[slots, : top.shape[1]] = top[known]

    def children(self, token: int, branching: int, previous: int = NO_TOKEN) -> list[int]:
        """The first `branching` candidates after `token` read after `previous`: from their two-token
        row where the table has one, from token's own row otherwise."""
        row = self.rows[token]
        if previous >= 0:
            key = previous * self.rows.shape[0] + token
            slot = key % self.pair_keys.shape[0]
            if int(self.pair_keys[slot]) == key:
                row = self.pair_rows[slot]
        return [t for t in row[:branching].tolist() if t >= 0]

    @property
    def filled(self) -> int:
        return int((self.rows[:, 0] >= 0).sum())

    def copy(self) -> "AdjacencyTable":
        """An independent table with the same rows and rank statistics (a bench repeat's start)."""
        return copy.deepcopy(self)


class RecyclingDrafter(DrafterBase):
    name = "recycling"
    free = True

    @classmethod
    def from_options(cls, options: DrafterOptions, matcher: PromptLookupDrafter | None = None) -> "RecyclingDrafter":
        """matcher: a prompt lookup drafter to find the context's match with (the mixed drafter's
        own, so a round looks the last n-gram up once)."""
        return cls(options.recycled or AdjacencyTable(options.target_vocab_size), options.tree, matcher)

    def __init__(self, table: AdjacencyTable, shape: TreeShape = TreeShape(),
                 matcher: PromptLookupDrafter | None = None):
        if shape.branching > table.width:
            raise ValueError(f"token recycling keeps {table.width} candidates per token; tree branching must be "
                             f"at most {table.width}, got {shape.branching}")
        self.table, self.shape = table, shape
        self._proposed: Grown | None = None  # the last tree proposed, scored by the pass that reads it
        # The context's match (n = MAX_NGRAM down to 1), cached per ids: PromptLookupDrafter.latest.
        self.matcher = matcher or PromptLookupDrafter()

    # reset: DrafterBase's, nothing: the table outlives requests on purpose

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        """Its tree sizes, in the case the round is in: with the context's candidates where the last
        token occurred before ("recycling:16", ...), the table alone where it did not
        ("recycling/table:16", ...; TABLE_ONLY in the module docstring)."""
        return budget_sources(self.name, self.shape.budget, None if self.matcher.latest(ids) else TABLE_ONLY)

    def has_row(self, token: int) -> bool:
        """Whether the table can grow a tree from token: the target has read it in this lane before."""
        return bool(self.table.rows[token, 0] >= 0)

    def observe(self, fed: list[int], logits: torch.Tensor, previous: list[int] | None = None) -> None:
        """A target pass read `fed` (the last committed token, then the drafted nodes), each after
        the token `previous` gives, and returned one row of logits per token read: recycle them all,
        and score the context's candidates if the pass read this drafter's tree."""
        proposed, self._proposed = self._proposed, None
        target_next = self.table.update(fed, logits, previous)
        if proposed is not None and proposed.match and fed[1:] == proposed.tokens:
            self._score_context(proposed, target_next)

    def _score_context(self, proposed: "Grown", target_next: list[int]) -> None:
        """A context node was right when the target, having read its parent (after the parent's own
        path: a tree pass reads each node in its path's context), chose the node's token next."""
        for token, parent, match in zip(proposed.tokens, proposed.parents, proposed.matches):
            if match:
                self.table.context_hits.observe(match, target_next[parent + 1] == token)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        grown = self._grown(ids, k, source)
        self._proposed = grown  # the pass that reads this tree scores its context nodes (observe)
        return _draft(grown)

    def peek(self, ids: list[int], k: int, source: str | None = None) -> Draft:
        """The tree propose would draft, leaving the context's scoring to the tree actually drafted."""
        return _draft(self._grown(ids, k, source))

    def _grown(self, ids: list[int], k: int, source: str | None) -> "Grown":
        budget = min((Source(source).budget if source else None) or self.shape.budget, self.shape.budget)
        return self.grow(ids[-1], k, budget, previous=ids[-2] if len(ids) > 1 else NO_TOKEN,
                         context=continuation_at(ids, self.matcher.latest(ids), k))

    def grow(self, root: int, depth: int, budget: int, previous: int = NO_TOKEN,
             context: "Continuation | None" = None) -> "Grown":
        """Best first from root (read after `previous`): the budget nodes of highest path score (the
        product of the hit rates along the path, module docstring), at most depth deep. A node's
        candidates are its first `branching` table candidates (after its parent's token) and, on the
        context's path, the context's next token (scored by context_hits for its match length; a
        candidate both offer is one node, scored by the better). A child is offered only once its
        parent is in the tree, so nodes come out parent first (a topological order); equal scores go
        to the earlier offered, so the tree is a function of the table and the context alone."""
        rates, context_rates = self.table.hits.rates(), self.table.context_hits.rates()
        grown = Grown([], [], [], context.match if context is not None else 0)
        order = 0  # tie-break: candidates in the order they were offered
        # (-score, order, parent node, parent's token, token, depth, position in the context's tokens
        # or -1, origin)
        frontier: list[tuple[float, int, int, int, int, int, int, str]] = []

        def offer(node: int, before: int, token: int, level: int, score: float, at: int) -> None:
            nonlocal order
            if level >= depth:
                return
            # child -> (hit rate, position in the context's tokens or -1, where it came from)
            candidates = {child: (rates[rank], -1, "table") for rank, child
                          in enumerate(self.table.children(token, self.shape.branching, before))}
            if context is not None and 0 <= at < len(context.tokens):
                child, rate = context.tokens[at], context_rates[context.match - 1]
                table = candidates.get(child)
                candidates[child] = (rate, at, "context") if table is None else (max(rate, table[0]), at, "both")
            for child, (rate, position, origin) in candidates.items():
                heapq.heappush(frontier, (-score * rate, order, node, token, child, level + 1, position, origin))
                order += 1

        offer(ROOT, previous, root, 0, 1.0, 0)
        while frontier and len(grown.tokens) < budget:
            score, _, parent, before, token, level, at, origin = heapq.heappop(frontier)
            grown.tokens.append(token)
            grown.parents.append(parent)
            grown.origins.append(origin)
            offer(len(grown.tokens) - 1, before, token, level, -score, at + 1 if at >= 0 else -1)
        return grown


def _draft(grown: "Grown") -> Draft:
    if not grown.tokens:
        return Draft([], None)
    tree = Tree(tuple(grown.tokens), tuple(grown.parents))
    # Best first: the tree of any smaller budget is this one's first nodes (nested).
    return Draft(list(tree.tokens), None, tree=tree, origins=tuple(grown.origins), nested=True)


@dataclass(frozen=True)
class Continuation:
    """What followed the latest earlier occurrence of the context's last `match` tokens (prompt
    lookup's draft, lookup.py), the longest match first."""

    tokens: tuple[int, ...]
    match: int


def context_continuation(ids: list[int], k: int) -> Continuation | None:
    """The continuation of the longest (up to MAX_NGRAM) earlier match of the context's last tokens,
    up to k tokens; None when the last token never occurred before."""
    return continuation_at(ids, latest_match(ids, MAX_NGRAM), k)


def continuation_at(ids: list[int], found: tuple[int, int] | None, k: int) -> Continuation | None:
    """The continuation of a match latest_match found: (where it starts, n); None: none found."""
    if found is None:
        return None
    start, n = found
    return Continuation(tuple(ids[start : start + k]), n)


@dataclass
class Grown:
    """A recycling tree: node i is tokens[i], child of parents[i] (-1: the root); origins[i] is
    "table", "context" or "both"; match is the length of the context match behind the context's
    nodes (0: no context)."""

    tokens: list[int]
    parents: list[int]
    origins: list[str]
    match: int = 0

    @property
    def matches(self) -> list[int]:
        """Per node, the match length that offered it (0: the table alone did)."""
        return [0 if origin == "table" else self.match for origin in self.origins]
