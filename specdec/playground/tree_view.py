"""A tree round as plain JSON, for the API and the tree chart: where its branches came from (table,
context or draft model), each node's token, its text, its parent, the accepted path, the draft's
reach, and the target's own token after the path."""
from __future__ import annotations

from ..engine.events import RoundEvent
from ..engine.sources import Source

# Where a tree's branches come from, by the drafter that grew it: what the tree view says of a round.
ORIGINS = {"recycling": "table and context: the target's earlier next-token guesses and what followed "
                         "the last tokens before (token recycling; each node says which)",
           "lookup-tree": "context: earlier occurrences of the last tokens (prompt lookup)",
           "draft-tree": "draft model"}


def origin(source: str) -> str:
    """Where the branches of a tree drafted by `source` ("recycling:16") came from."""
    drafter = Source(source).drafter if source else ""
    return ORIGINS.get(drafter, drafter or "unknown")


def node_texts(tokenizer, root: int, tokens: list[int], parents: list[int]) -> list[str]:
    """Each node's text as it would read after its ancestors.

    A token decoded alone loses what its context decides (SentencePiece drops a word's leading
    space), so a node's piece is decode(root, ancestors, node) minus decode(root, ancestors), as the
    lanes' Detokenizer does. Where that is not a clean extension (a token ending inside a multi-byte
    character), the token's own decoding stands in."""
    chains: list[list[int]] = []  # each node's ancestors and itself, from the root's child down
    for token, parent in zip(tokens, parents):
        chains.append(([] if parent < 0 else chains[parent]) + [token])
    return [piece(tokenizer, [root] + chain[:-1], chain[-1]) for chain in chains]


def piece(tokenizer, context: list[int], token: int) -> str:
    """token's text after context."""
    before = _decode(tokenizer, context)
    after = _decode(tokenizer, context + [token])
    clean = after.startswith(before) and not after.endswith("\ufffd")
    return after[len(before):] if clean else _decode(tokenizer, [token])


def _decode(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=True)


def tree_json(event: RoundEvent, tokenizer, root: int) -> dict:
    """The round's tree (event.tree must be set); root is the last committed token before the round.

    target_token is the token the target chose after the accepted path, with its fate (BONUS when
    the path ended at a leaf, else CORRECTED); both are None when EOS or max_new_tokens ended the
    run inside the round, before the target's token was kept."""
    tree = event.tree
    n_path = len(tree.path)
    kept = len(event.tokens) > n_path  # the round's tokens are the path's, then the target's
    target = event.tokens[n_path] if kept else None
    return {
        "round": event.round,
        "source": event.source,
        "origin": origin(event.source),
        "tokens": list(tree.tokens),
        "text": node_texts(tokenizer, root, list(tree.tokens), list(tree.parents)),
        "parents": list(tree.parents),
        "path": list(tree.path),
        "reach": None if tree.reach is None else [float(r) for r in tree.reach],
        "origins": None if tree.origins is None else list(tree.origins),
        "target_token": target,
        "target_text": None if target is None else piece(tokenizer, [root, *_path_tokens(tree)], target),
        "target_fate": event.fates[n_path] if kept else None,
    }


def _path_tokens(tree) -> list[int]:
    return [tree.tokens[node] for node in tree.path]


def pick_tree(trees: list[dict] | None, number) -> dict | None:
    """The number-th tree of a run (1-based, as the Round slider counts), clamped to the run's trees;
    None when the run had none. number comes raw from the slider: anything not a number is 1."""
    if not trees:
        return None
    try:
        index = int(number) - 1
    except (TypeError, ValueError, OverflowError):
        index = 0
    return trees[min(max(index, 0), len(trees) - 1)]
