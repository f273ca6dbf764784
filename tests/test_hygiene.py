"""Project hygiene that CI enforces: lint, format, strict typing, one importer."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped]  # no stubs pinned in [lint]
import pytest

from ci.profiles import PROJECT_PACKAGES, import_project_modules

ROOT = Path(__file__).resolve().parent.parent
BINDING_IMPORT = re.compile(
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


def test_exactly_one_package_imports_the_binding() -> None:
    """Only the modules of the impl/adapter package import impl._native."""
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if "target" not in path.parts
        and BINDING_IMPORT.search(path.read_text(encoding="utf-8"))
    )

    assert "impl/adapter/lib.py" in importers
    assert [] == [path for path in importers if not path.startswith("impl/adapter/")]


def test_every_project_module_is_imported_before_the_first_test() -> None:
    """Hypothesis draws literals from every non-test module, so its programs repeat.

    `ci.profiles` imports the project at start-up; a module it missed would be
    imported (or not) by whichever tests ran first in a process, and the
    derandomized machines would then generate different programs per process.
    """
    expected = set()
    for package in PROJECT_PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in {".py", ".so"}:  # .so: the binding
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


# ---- one registry of subjects ---------------------------------------------------

REGISTRY_MODULE = ROOT / "ci" / "subjects.py"


def _names_a_subject(node: ast.AST, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Constant) and node.value in names


def _about_a_subject(node: ast.AST) -> bool:
    return "subject" in ast.unparse(node).lower()


def subject_name_branches(path: Path, names: frozenset[str]) -> list[str]:
    """Where `path` branches on a subject's name or keeps a table keyed by it.

    A comparison (`==`, `!=`, `in`) or a `match` case between a subject's
    name and an expression about a subject, and a dict literal keyed by two
    or more subject names: each is a place that must change when a subject
    is added, which the registry exists to prevent.
    """
    found: list[str] = []
    shown = path.relative_to(ROOT) if ROOT in path.parents else path.name
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{shown}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_a_subject(o, names) for o in operands) and any(
                _about_a_subject(o) for o in operands
            ):
                found.append(f"{where}: {ast.unparse(node)}")
        elif isinstance(node, ast.Match) and _about_a_subject(node.subject):
            for case in node.cases:
                pattern = case.pattern
                if isinstance(pattern, ast.MatchValue) and _names_a_subject(
                    pattern.value, names
                ):
                    found.append(f"{where}: case {ast.unparse(pattern)}")
        elif isinstance(node, ast.Dict):
            keyed = [key for key in node.keys if key and _names_a_subject(key, names)]
            if len(keyed) >= 2:
                found.append(f"{where}: a table keyed by subject names")
    return found


def test_no_module_branches_on_a_subject_name() -> None:
    """Only `ci/subjects.py` knows the subjects by name; the rest asks it."""
    from ci import subjects  # noqa: PLC0415 - the registry, only for its names

    names = frozenset(subjects.names())
    files = sorted(
        path
        for package in ("ci", "properties", "stateful")
        for path in (ROOT / package).rglob("*.py")
        if path != REGISTRY_MODULE and "artifacts" not in path.parts
    )

    assert [] == [line for path in files for line in subject_name_branches(path, names)]


def test_the_subject_check_sees_a_branch_on_a_name(tmp_path: Path) -> None:
    """The check above finds a comparison, a case and a table keyed by names."""
    source = tmp_path / "branches.py"
    source.write_text(
        "if subject == 'queue':\n    pass\n"
        "match header.subject:\n    case 'affinity':\n        pass\n"
        "KINDS = {'affinity': 1, 'queue': 2}\n"
        "kind = 'queue' if op.kind == 'replica' else 'affinity'\n",
        encoding="utf-8",
    )
    names = frozenset({"affinity", "queue", "replica"})

    found = subject_name_branches(source, names)

    assert 3 == len(found), found


# ---- properties state their expectations in their own words ----------------------


def model_functions_imported(path: Path) -> list[str]:
    """The model functions `path` imports (`module.name`); types and data are fine.

    A property that computes its expectation with the model's own function
    cannot fail on the model, so `properties/` may import the model's classes,
    type aliases and constants, but nothing callable that is not a type.
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "model"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "model"
        ):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                imported = getattr(module, alias.name)
                if callable(imported) and not isinstance(imported, type):
                    found.append(f"{node.module}.{alias.name}")
    return found


def test_properties_import_the_models_types_but_not_its_functions() -> None:
    """No module under `properties/` imports a function (or module) of `model/`."""
    found = {
        str(path.relative_to(ROOT)): model_functions_imported(path)
        for path in sorted((ROOT / "properties").rglob("*.py"))
    }

    assert {} == {path: names for path, names in found.items() if names}


def test_the_property_check_sees_an_imported_model_function(tmp_path: Path) -> None:
    """The check above finds a model function, and lets types and constants pass."""
    source = tmp_path / "asks_the_model.py"
    source.write_text(
        "import model.queue.table\n"
        "from model.queue.table import Entry, best\n"
        "from model.queue.types import USIZE_MAX\n",
        encoding="utf-8",
    )

    assert ["model.queue.table", "model.queue.table.best"] == model_functions_imported(
        source
    )


MODEL_READERS: dict[str, str] = {
    "allows": "the pop's dispatch predicate is the operation's own input",
    "entry": "a session's entry, looked up by id",
    "lane": "a class's entries of one placement, filtered",
    "lane_workers": "the workers with a lane in a class, listed",
    "limit_per_worker": "a class's configured limit of one kind, read",
    "message": "a message in flight, looked up by link and position",
}
"""Model methods a property may call: each only reads the state, and why."""


def model_methods() -> frozenset[str]:
    """Names of the methods the model's classes define (not `@property`, not dunder)."""
    names: set[str] = set()
    for path in sorted((ROOT / "model").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for member in node.body:
                if (
                    isinstance(member, ast.FunctionDef)
                    and not member.name.startswith("__")
                    and not any(
                        isinstance(d, ast.Name) and d.id == "property"
                        for d in member.decorator_list
                    )
                ):
                    names.add(member.name)
    return frozenset(names)


def test_properties_call_no_model_method_but_its_readers() -> None:
    """A property may read the model's state, never ask a model method to decide."""
    methods = model_methods()
    called = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno}: .{node.func.attr}()"
        for path in sorted((ROOT / "properties").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in methods
        and node.func.attr not in MODEL_READERS
    )

    assert [] == called
    assert set() == set(MODEL_READERS) - methods  # every reader still exists
