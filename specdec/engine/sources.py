"""A drafter's source: who drafts a round, for a tree source how many nodes its tree holds, and for
a drafter whose acceptance follows something it can see before drafting, which case the round is in.

A policy keeps its acceptance and cost evidence per source and picks one each round (policy.py);
the cost of verifying what a source drafts depends on the width of the target's pass:

    chain source, k drafts:        k + 1 tokens (the last committed token, then the k drafts)
    tree source of n nodes, k > 0: n + 1 tokens (the root, then every node, whatever the depth k)
    any source, k = 0:             1 token: no draft, a plain step

A case (a regime) keeps evidence of different situations apart, as two arms of one bandit: token
recycling drafts from its table and the context where the last token occurred before, from the
table alone where it did not, and the policy learns each case's acceptance on its own, as it learns
prompt lookup's only where it has a match (recycling.py says why). The names:

    "draft-model"        a chain source
    "recycling:8"        a tree source of 8 nodes
    "recycling/table:8"  the same drafter's tree of 8 nodes, in its "table" case

A Source is a str, so it compares and hashes equal to its name and is read back from its JSON
form; it is built and read here only, so no other module spells or parses the ":n" or the "/case".
Where it leaves the engine (a RoundEvent's `source`, the cost model's keys) it is
written as a plain str(): orjson, which Gradio uses, refuses str subclasses as dict keys.
"""
from __future__ import annotations

from functools import lru_cache


class Source(str):
    __slots__ = ()

    def __new__(cls, name: str, budget: int | None = None, case: str | None = None) -> "Source":
        if budget is not None and (isinstance(budget, bool) or budget < 1):
            raise ValueError(f"a tree source holds at least one node, got budget {budget!r}")
        family = name if case is None else f"{name}/{case}"
        return super().__new__(cls, family if budget is None else f"{family}:{budget}")

    @property
    def budget(self) -> int | None:
        """n for a tree source of n nodes; None for a chain source."""
        return _budget(str(self))

    @property
    def family(self) -> str:
        """Its name without the budget: 'recycling/table' for 'recycling/table:8'. The budgets of one
        family are one drafter's nested trees in one case (policy.CostModel.observe_smaller_trees)."""
        return self.rpartition(":")[0] if self.budget is not None else str(self)

    @property
    def drafter(self) -> str:
        """The name of the drafter that drafts it: 'draft-tree' for 'draft-tree:16', 'recycling' for
        'recycling/table:8'."""
        return drafter_of(str(self))

    @property
    def case(self) -> str | None:
        """The case its evidence is of: 'table' for 'recycling/table:8'; None for most sources."""
        return self.family.partition("/")[2] or None

    def verify_width(self, k: int) -> int:
        """Tokens in the target pass that verifies k drafts of this source (the table above)."""
        return k + 1 if self.budget is None or k == 0 else self.budget + 1


@lru_cache(maxsize=1024)
def _budget(name: str) -> int | None:
    """Source.budget, parsed once per name: the cost policy asks it of every (source, k) every round."""
    _, colon, n = name.rpartition(":")
    return int(n) if colon and n.isdigit() else None


@lru_cache(maxsize=1024)
def drafter_of(name: str) -> str:
    """Source(name).drafter, parsed once per name: the cost policy asks whether each source is free
    (CostModel.is_free, by drafter) several times a round."""
    return Source(name).family.partition("/")[0]


def budget_sources(name: str, budget: int, case: str | None = None) -> tuple[Source, ...]:
    """A tree drafter's sources (in `case`): its configured budget first, then the powers of two
    below it down to 2 (a one-node tree is a one-token chain), so the policy can pick a smaller tree
    where the big one's pass costs more than it yields."""
    smaller = [2 ** i for i in range(budget.bit_length() - 1, 0, -1) if 2 ** i < budget]
    return tuple(Source(name, b, case) for b in [budget, *smaller])
