"""Project hygiene that CI enforces: lint, format, strict typing, one importer."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped]  # no stubs pinned in [lint]
import pytest

from ci.profiles import PROJECT_PACKAGES, import_project_modules

ROOT = Path(__file__).resolve().parent.parent
NATIVE_IMPORT = re.compile(
    r"^\s*(from\s+impl\s+import\s+_native|import\s+impl\._native|from\s+impl\._native\s+import)",
    re.MULTILINE,
)


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed tool invocations
        command, cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff comes with .[lint]")
def test_ruff_finds_nothing() -> None:
    """`ruff check` passes on the whole tree."""
    result = _run("ruff", "check", ".")

    assert 0 == result.returncode, result.stdout[-4000:]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff comes with .[lint]")
def test_the_tree_is_formatted() -> None:
    """`ruff format --check` finds nothing to reformat."""
    result = _run("ruff", "format", "--check", ".")

    assert 0 == result.returncode, result.stdout[-4000:]


def test_every_package_and_the_tests_type_check_strictly() -> None:
    """Mypy --strict passes on the configured files: every package, tests too."""
    pytest.importorskip("mypy")
    result = _run(sys.executable, "-m", "mypy")

    assert 0 == result.returncode, result.stdout[-4000:]


def test_exactly_one_module_imports_the_native_extension() -> None:
    """Only impl/adapter.py imports impl._native."""
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if "target" not in path.parts
        and NATIVE_IMPORT.search(path.read_text(encoding="utf-8"))
    )

    assert ["impl/adapter.py"] == importers


def test_every_project_module_is_imported_before_the_first_test() -> None:
    """Hypothesis draws literals from every non-test module, so its programs repeat.

    `ci.profiles` imports the project at start-up; a module it missed would be
    imported (or not) by whichever tests ran first in a process, and the
    derandomized machines would then generate different programs per process.
    """
    expected = set()
    for package in PROJECT_PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in {".py", ".so"}:  # .so: the native extension
                continue
            relative = path.relative_to(ROOT)
            relative = relative.with_name(relative.name.split(".")[0])
            if relative.name.startswith("test_") or "target" in relative.parts:
                continue
            if (ROOT / "ci" / "artifacts") in path.parents:  # git-ignored failures
                continue
            parts = (
                relative.parts[:-1] if relative.name == "__init__" else relative.parts
            )
            expected.add(".".join(parts))

    assert sorted(expected) == sorted(set(import_project_modules()))
    assert set() == expected - set(sys.modules)


# ---- the import graph ---------------------------------------------------------

LAYERS: dict[str, int] = {
    "model": 0,
    "impl": 1,
    "properties": 1,
    "stateful": 2,
    "ci": 3,
    "tests": 4,
}
"""A package may import its own layer and the layers below, never above."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """Project modules `path` imports anywhere (type-only and lazy imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found |= {name for name in names if name in known}
    return found


def import_graph() -> nx.DiGraph:
    """Every project module and the project modules it imports."""
    files = sorted(
        path
        for package in sorted(LAYERS)
        for path in (ROOT / package).rglob("*.py")
        if "target" not in path.parts and "artifacts" not in path.parts
    )
    modules = {_module_name(path): path for path in files}
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(modules))
    for name, path in sorted(modules.items()):
        for imported in sorted(_imports(path, set(modules))):
            if imported != name:
                graph.add_edge(name, imported)
    return graph


def test_the_import_graph_has_no_circle() -> None:
    """No module imports itself through others (type-only imports count)."""
    assert [] == sorted(nx.simple_cycles(import_graph()))


def test_no_package_imports_a_package_above_it() -> None:
    """Model < impl, properties < stateful < ci < tests: arrows only point down."""
    graph = import_graph()
    upward = sorted(
        (source, target)
        for source, target in graph.edges
        if LAYERS[target.split(".")[0]] > LAYERS[source.split(".")[0]]
    )

    assert [] == upward
