"""Reading the bench's JSONL files (its own prompt suites and Spec-Bench's questions): one JSON object
a line, blank lines skipped, and every error named by file and line, as the user's editor numbers it.
Writing its results: one JSON file, atomically."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator


def rows(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of path. Lines end at \\n (and \\r\\n) only: JSON
    strings may hold U+2028, U+0085 and the other breaks str.splitlines() also splits at, and
    json.dumps(ensure_ascii=False) writes them raw. A leading byte-order mark is skipped."""
    if Path(path).is_dir():
        raise ValueError(f"{path}: a folder, not a JSONL file")
    for number, line in enumerate(Path(path).read_text(encoding="utf-8-sig").split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not valid JSON ({error.msg}, column {error.colno})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: each line must be a JSON object, got {type(row).__name__}")
        yield number, row


def save_json(path: Path, data: dict) -> None:
    """data at path, atomically (a run stopped mid-write leaves the file before it), strict JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False))
    os.replace(tmp, path)
