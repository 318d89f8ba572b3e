"""Plain event objects the decoders yield. They know nothing of text or of any UI."""
from __future__ import annotations

from dataclasses import dataclass

# PLAIN is the one token of a round that drafted nothing: the target's ordinary next token, which
# is plain decoding and must not be shown as a "bonus" earned by speculation.
ACCEPTED, CORRECTED, BONUS, PLAIN = "accepted", "corrected", "bonus", "plain"


@dataclass(frozen=True)
class TokenEvent:
    """One token of standard decoding; seconds is this step's time (the first includes prefill)."""

    index: int
    token: int
    seconds: float
    finished: bool


@dataclass(frozen=True)
class TreeRound:
    """A tree round's proposal and what the target kept of it. Node i is tokens[i], child of
    parents[i] (-1: the root, the last committed token); path lists the accepted nodes from the root
    down. reach[i] is the draft's own probability of reaching node i (None when the drafter has no
    probabilities, as prompt lookup). origins[i] says where node i came from when the drafter has more
    than one origin (token recycling: "table", "context" or "both"), else None. nested: the drafter's
    tree of any smaller budget b is this one's first b nodes (first)."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    path: tuple[int, ...]
    reach: tuple[float, ...] | None = None
    origins: tuple[str, ...] | None = None
    nested: bool = False
    chain: str | None = None  # the chain source whose draft is this tree's likeliest path (as_chain)

    @property
    def depth(self) -> int:
        """The longest branch."""
        depths: list[int] = []
        for parent in self.parents:
            depths.append(1 if parent < 0 else depths[parent] + 1)
        return max(depths, default=0)

    @property
    def ended_at_leaf(self) -> bool:
        """The accepted path's last node has no children: nothing below it was tried (a bonus)."""
        end = self.path[-1] if self.path else -1
        return end not in self.parents

    @property
    def tested_length(self) -> int:
        """How deep acceptance was tested, as a chain's would be: the tree's depth, or the accepted
        path's length where that path ended at a leaf (no deeper position was tried, so none was
        rejected)."""
        return len(self.path) if self.ended_at_leaf else self.depth

    def as_chain(self) -> tuple[int, int, tuple[float, ...]]:
        """What the chain source `chain` would have shown this round: (positions drafted, accepted,
        confidences) of the tree's likeliest path, followed from the root to the child of highest
        reach at each node.

        Why that is the chain's own verdict (greedy only; the drafter sets `chain` only then). A
        greedy draft tree ranks nodes by the draft's softmax, so a node's likeliest child is the
        draft's argmax after that node's path: the token a greedy chain of the same model drafts
        there (reach[child] / reach[node] is its confidence, as the chain reads it). The target keeps
        the chain's token at depth j exactly when its argmax is that child, which is when the tree's
        accepted path goes through it. So the chain keeps its first `accepted` tokens; it was tested
        one deeper where the tree's path left the likeliest child (a rejection) and no deeper where
        the likeliest path ends at a leaf (the tree drafted nothing below it). Best-first growth never
        keeps a child without its likelier siblings, so a likeliest child is in the tree whenever
        any child is."""
        node, depth, accepted, confidences = -1, 0, 0, []
        while True:
            children = [n for n, parent in enumerate(self.parents) if parent == node]
            if not children or self.reach is None:
                return depth, accepted, tuple(confidences)
            likeliest = max(children, key=lambda n: (self.reach[n], -n))
            confidences.append(self.reach[likeliest] / (1.0 if node < 0 else self.reach[node] or 1.0))
            depth += 1
            if accepted >= len(self.path) or self.path[accepted] != likeliest:
                return depth, accepted, tuple(confidences)
            accepted, node = accepted + 1, likeliest

    def first(self, budget: int) -> "TreeRound":
        """What the tree of its first `budget` nodes would have accepted, for a nested tree (the
        drafter's tree of that budget). Nodes are numbered parents first, so the nodes of any path
        rise and the smaller tree's path is the accepted path's prefix below `budget`.

        Why that is the smaller tree's own verdict. Greedy: at each node the target's argmax picks
        the child; the smaller tree holds a subset of the children, so it follows the same path
        while the argmax is among its nodes and stops where it is not. Sampled, with one-hot drafts
        (tree_verify.py): the rule keeps sibling c with probability p(c) and otherwise draws from p
        less the siblings, so the round is a draw y ~ p at each depth, followed while y is a child.
        The smaller tree would follow the same draw while y is among its children: the same
        distribution of accepted paths (not the same coin flips, which the policy never needs)."""
        if not self.nested:
            raise ValueError("only a nested tree's first nodes are a smaller tree of its drafter")
        path = []
        for node in self.path:
            if node >= budget:
                break
            path.append(node)
        cut = slice(0, budget)
        return TreeRound(self.tokens[cut], self.parents[cut], tuple(path),
                         None if self.reach is None else self.reach[cut],
                         None if self.origins is None else self.origins[cut], True)


@dataclass(frozen=True)
class RoundEvent:
    """One draft-then-verify round of speculative decoding.

    tokens are the tokens this round added, each with its fate: ACCEPTED (a draft token the target
    kept), CORRECTED (the target's token at the first rejection), BONUS (the target's token after at
    least one draft, all kept) or PLAIN (the target's token in a round that drafted nothing). tokens
    can be shorter than accepted + 1 when EOS or max_new_tokens ends generation inside the round.

    A tree round (tree is set) drafted every node of the tree: drafted holds all their tokens,
    accepted is the length of the accepted path, and k is the depth the tree was allowed. alpha is
    then empty: per-position acceptance of a chain has no meaning for siblings.
    """

    round: int
    k: int  # how many tokens were asked of the drafter
    drafted: tuple[int, ...]  # what it proposed (prompt lookup may propose fewer than k)
    # how many drafted tokens verification accepted: the draft's record, which acceptance statistics
    # count, even where an EOS among them or the budget cut tokens short (then accepted > len(tokens))
    accepted: int
    tokens: tuple[int, ...]
    fates: tuple[str, ...]
    draft_seconds: float
    verify_seconds: float
    alpha: tuple[float, ...]  # analytic acceptance sum_x min(p, q) of each drafted position
    finished: bool
    source: str = ""  # which drafter made the draft (the hybrid drafter has two)
    gain: float | None = None  # the policy's expected tokens/s for this k over plain decoding's
    reason: str = ""  # why the policy chose this k
    policy_seconds: float = 0.0  # the part of draft_seconds spent choosing k (and asking free sources what they
    # would have drafted, for the cost policy to learn from: CostModel.observe_free)
    catch_up: int = 0  # committed tokens the draft model read before drafting (see Draft.catch_up)
    tree: TreeRound | None = None
    confidences: tuple[float, ...] = ()  # a model draft's probability of each drafted token
    # k was cut below the policy's choice because the answer had room for fewer tokens (its last
    # rounds): what the policy chose is not what this round shows
    budget_cut: bool = False

    @property
    def seconds(self) -> float:
        return self.draft_seconds + self.verify_seconds

    @property
    def draft_length(self) -> int:
        """A chain's drafted tokens; a tree's depth. Either way the draft passes the round cost a model
        drafter and the longest run of tokens it could add: what the alpha-geometric model, c (cost
        per draft pass) and a policy's acceptance by position count. A tree's width shows in its
        verify cost and its acceptance instead."""
        return len(self.drafted) if self.tree is None else self.tree.depth

    @property
    def tested_length(self) -> int:
        """How deep the round's acceptance was tested, as a chain's would be: its drafted tokens; a
        tree's depth, or the accepted path's length where that path ended at a leaf (no deeper
        position was tried, so none was rejected). The alpha-geometric statistics and the heuristic
        count with this; the cost policy, which prices what a tree or a lookup yields when asked k
        deep, with k (CostModel.asked_depth)."""
        return self.draft_length if self.tree is None else self.tree.tested_length
