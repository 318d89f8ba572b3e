"""Token recycling (Luo et al. 2024, "Turning Trash into Treasure: Accelerating Inference of Large
Language Models with Token Recycling"): drafting with no draft model, from the target's own past
guesses.

Every target pass computes a distribution over the next token at each position it reads, and a
speculative round keeps one of them: the others (the candidates after each drafted token, after the
rejected ones too) are thrown away. Token recycling keeps their top candidates instead, in an
adjacency table A of shape [vocab, b]: A[t] holds the b tokens the target last ranked highest right
after reading t. To draft, it follows the table from the last committed token, breadth first: the
root's row gives its children, each child's row its own, up to TreeShape's budget nodes, `branching`
children per node and depth k. The tree is verified in one target pass like any other (kvcache.py,
tree_verify.py), and that pass's own logits refill the rows of every token it read.

The table is a bigram model the target keeps writing: after "import" it remembers what the target
expected last time it read "import", in whatever context. It needs no training and costs a top-b and
one scatter per pass, on the device the model is on.

Initialisation and lifetime. Rows start empty (-1: no candidate), so a row drafts nothing until the
target has read its token once in the speculative lane; the prompt's prefill fills only its last
position's row (the rest of the prefill's logits are never computed: the head runs on the last
position only). The table belongs to the pair (Pair.recycling_table), not to a request: it warms up
over a session, and a second question drafts from what the first taught it. Only the speculative
lane feeds it, inside its timed rounds (the update is counted as the drafter's time); the standard
lane never touches it.

Exactness. The tree is deterministic given the table and the committed ids, drawn in the "top" mode
(q one-hot on each child), so greedy and multi-candidate rejection acceptance are exact for the
target (tree_verify.py); what the table holds changes only how much is accepted, never the output.
"""
from __future__ import annotations

from collections import deque

import torch

from ..config import Sampling, TreeShape
from ..sources import Source
from ..tree_verify import ROOT, Tree
from .options import DrafterOptions
from .base import Draft, DrafterBase

ROW_WIDTH = 8  # candidates kept per token: the most any TreeShape.branching asks of a row here


class AdjacencyTable:
    """A[t] = the target's top ROW_WIDTH next tokens after t, as last seen; -1 where never seen."""

    def __init__(self, vocab_size: int, device: torch.device | str = "cpu", width: int = ROW_WIDTH):
        self.rows = torch.full((vocab_size, width), -1, dtype=torch.int32, device=device)

    @property
    def width(self) -> int:
        return self.rows.shape[1]

    def update(self, tokens: list[int], logits: torch.Tensor) -> None:
        """logits[i] is the target's next-token logits after reading tokens[i] (one pass's rows)."""
        if not tokens:
            return
        top = logits[: len(tokens)].topk(min(self.width, logits.shape[-1]), dim=-1).indices.to(torch.int32)
        index = torch.tensor(tokens, dtype=torch.long, device=self.rows.device)
        self.rows[index, : top.shape[1]] = top.to(self.rows.device)

    def children(self, token: int, branching: int) -> list[int]:
        return [t for t in self.rows[token, :branching].tolist() if t >= 0]

    @property
    def filled(self) -> int:
        return int((self.rows[:, 0] >= 0).sum())


class RecyclingDrafter(DrafterBase):
    name = "recycling"

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "RecyclingDrafter":
        return cls(options.recycled or AdjacencyTable(options.target_vocab_size), options.tree)

    def __init__(self, table: AdjacencyTable, shape: TreeShape = TreeShape()):
        if shape.branching > table.width:
            raise ValueError(f"token recycling keeps {table.width} candidates per token; tree branching must be "
                             f"at most {table.width}, got {shape.branching}")
        self.table, self.shape = table, shape

    # reset: DrafterBase's, nothing: the table outlives requests on purpose

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        return (Source(self.name, self.shape.budget),)

    def observe(self, fed: list[int], logits: torch.Tensor) -> None:
        """A target pass read `fed` (the last committed token, then the drafted nodes) and returned
        one row of logits per token read: recycle them all."""
        self.table.update(fed, logits)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        budget = min((Source(source).budget if source else None) or self.shape.budget, self.shape.budget)
        tokens, parents = self.grow(ids[-1], k, budget)
        if not tokens:
            return Draft([], None)
        tree = Tree(tuple(tokens), tuple(parents))
        return Draft(list(tree.tokens), None, tree=tree)

    def grow(self, root: int, depth: int, budget: int) -> tuple[list[int], list[int]]:
        """Breadth first from root: each node's first `branching` table candidates, down to depth,
        until budget nodes. Nodes come out parent first (a topological order)."""
        tokens: list[int] = []
        parents: list[int] = []
        queue = deque([(ROOT, root, 0)])  # (node, its token, its depth)
        while queue and len(tokens) < budget:
            node, token, level = queue.popleft()
            if level == depth:
                continue
            for child in self.table.children(token, self.shape.branching):
                if len(tokens) == budget:
                    break
                tokens.append(child)
                parents.append(node)
                queue.append((len(tokens) - 1, child, level + 1))
        return tokens, parents
