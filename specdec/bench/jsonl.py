"""Reading the bench's JSONL files (its own prompt suites and Spec-Bench's questions): one JSON object
a line, blank lines skipped, and every error named by file and line, as the user's editor numbers it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator


def rows(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of path."""
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not valid JSON ({error.msg}, column {error.colno})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: each line must be a JSON object, got {type(row).__name__}")
        yield number, row
