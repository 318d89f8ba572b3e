"""Sections one report file holds for other runs: the Spec-Bench leaderboard of each model pair
lives in docs/BENCHMARKS.md beside the grid's report, and neither run's rewrite drops the other's.

A section is the text between `<!-- spec-bench: KEY -->` and `<!-- /spec-bench: KEY -->`; KEY names
the pair it measured, so a second run of the same pair replaces its own section and no other."""
from __future__ import annotations

import re
from pathlib import Path

SECTION = re.compile(r"<!-- spec-bench: (?P<key>[^>]*?) -->\n.*?<!-- /spec-bench: (?P=key) -->\n?", re.S)


def section(key: str, text: str) -> str:
    return f"<!-- spec-bench: {key} -->\n{text.rstrip()}\n<!-- /spec-bench: {key} -->\n"


def sections(text: str) -> dict[str, str]:
    """KEY -> the whole marked section, in the order they appear."""
    return {m["key"]: m[0] if m[0].endswith("\n") else m[0] + "\n" for m in SECTION.finditer(text)}


def put_section(path: Path, key: str, text: str) -> None:
    """Write text as KEY's section of the report at path: in place of KEY's earlier section, else at
    the end; a file that does not exist yet gets the section alone."""
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    new = section(key, text)
    if key in sections(old):
        body = SECTION.sub(lambda m: new if m["key"] == key else m[0], old)
    else:
        body = old.rstrip("\n") + ("\n\n" if old.strip() else "") + new
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def keep_sections(path: Path, generated: str) -> str:
    """The grid's freshly generated report with the Spec-Bench sections the file at path holds."""
    kept = sections(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return generated.rstrip("\n") + "".join("\n\n" + s for s in kept.values()) + "\n"
