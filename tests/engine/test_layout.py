"""The layout's one rule: arrows point down. The engine imports torch and transformers, never gradio,
plotly, the playground, the bench or the model loaders; the playground and the bench never import
each other. Checked twice: statically over every import statement, and by importing the engine in a
fresh interpreter where gradio and plotly cannot be imported at all."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "specdec"
FORBIDDEN = {
    "engine": ("gradio", "plotly", "specdec.playground", "specdec.bench", "specdec.models", "specdec.cli"),
    "models": ("gradio", "plotly", "specdec.playground", "specdec.bench", "specdec.cli"),
    "playground": ("gradio", "specdec.bench", "specdec.cli"),  # app.py alone wires Gradio
    "bench": ("gradio", "specdec.playground"),
}


def imports(path: Path) -> set[str]:
    """Every module path imports, relative imports resolved against its package."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}  # `from . import bench`
    return found


def violations(room: str) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / room).rglob("*.py")):
        for module in imports(path):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN[room]):
                bad.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    return bad


def test_every_room_imports_only_downward():
    assert all(list(FORBIDDEN)) and all(any((PACKAGE / room).rglob("*.py")) for room in FORBIDDEN)
    assert [v for room in FORBIDDEN for v in violations(room)] == []


def test_the_check_sees_a_forbidden_import(tmp_path, monkeypatch):
    """The static check is not vacuous: a relative import of the playground from the engine is caught."""
    fake = tmp_path / "specdec"
    (fake / "engine").mkdir(parents=True)
    (fake / "engine" / "leak.py").write_text("from ..playground import render\nimport plotly.graph_objects\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert sorted(violations("engine")) == ["specdec/engine/leak.py imports plotly.graph_objects",
                                            "specdec/engine/leak.py imports specdec.playground",
                                            "specdec/engine/leak.py imports specdec.playground.render"]


BLOCKED_IMPORT = """
import importlib, importlib.abc, pkgutil, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("gradio", "plotly"):
            raise ImportError(f"{name} is blocked: the engine must not need it")

sys.meta_path.insert(0, Block())
import specdec, specdec.engine
for info in pkgutil.walk_packages(specdec.engine.__path__, "specdec.engine."):
    importlib.import_module(info.name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("gradio", "plotly")
                or m.startswith(("specdec.playground", "specdec.bench")))
print("engine modules:", sum(m.startswith("specdec.engine.") for m in sys.modules), "leaked:", loaded)
"""


def test_the_engine_imports_with_gradio_and_plotly_blocked():
    done = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], capture_output=True, text=True,
                          cwd=PACKAGE.parent, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    count = int(done.stdout.split("engine modules:")[1].split()[0])
    assert count >= 10 and done.stdout.rstrip().endswith("leaked: []"), done.stdout


def test_the_public_api_is_what_a_user_needs_and_the_rest_lives_in_the_engine():
    import specdec
    import specdec.engine

    assert set(specdec.__all__) == {"load_model", "Pair", "Request", "Sampling", "Speculation", "TreeShape",
                                    "TokenEvent", "RoundEvent", "TreeRound", "compare"}
    assert all(hasattr(specdec, name) for name in specdec.__all__)
    assert all(hasattr(specdec.engine, name) for name in specdec.engine.__all__)
    assert {"CachedModel", "ModelDrafter", "speculative_decode", "check_tokenizers"} <= set(specdec.engine.__all__)


EDGES = [PACKAGE.parent / "app.py", *sorted((PACKAGE / "playground").rglob("*.py")), PACKAGE / "cli.py",
         PACKAGE / "comparison.py", PACKAGE / "serving.py", *sorted((PACKAGE / "bench").rglob("*.py"))]


def long_functions(paths, limit: int = 60) -> list[str]:
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_at_the_edges_is_longer_than_a_screen(tmp_path):
    """Issue #19: app.py, the playground, the CLI and the bench keep functions under 60 lines."""
    assert long_functions(EDGES) == []
    sample = tmp_path / "long.py"
    sample.write_text("def f():\n" + "    x = 1\n" * 60)
    assert long_functions([sample]) == ["long.py:1 f (61 lines)"]


def test_no_two_modules_share_a_file_name():
    """Issue #19: a file name says what it holds, once (__init__ and __main__ aside)."""
    names = [p.name for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
