"""A failing program as Hypothesis printed it, written as a script that reruns it.

Hypothesis prints a failing stateful example one step per line
(`state.acquire(session_id='a', requested=None)`, see `stateful.machine`);
`script` turns those lines into `program.py` of an artifact folder
(`ci.replay.artifacts`): the machine class the test ran (its importable base,
with the system under test the test gave it, a canary by its name), the
names the printed values use, the build the failure was found on, and the
lines themselves in a function that `rerun` calls. Run it from the
checkout's root:

    python ci/artifacts/<test>/<stamp>/program.py

It exits 1 with the failure's traceback and notes when the failure
reproduces, 0 if the program passed, and 2 with one line when this
checkout's binding is not the build the program names.
"""

from __future__ import annotations

import builtins
import importlib
import re
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

INDENT: Final[str] = "    "
_NAME_USED = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?=\s*[(.])")
"""A name the printed program calls or reads an attribute of (`Target(`,
`Mode.HARD`, `math.inf`); names inside strings may match too, and resolve to
nothing."""
RUN_FROM_ROOT: Final[str] = (
    "program.py: error: run it from the root of the checkout ({error})"
)
_FIRST_LINE = re.compile(r"^state = \w+\(\)$")


class ProgramError(Exception):
    """The printed program cannot be written as a script (the message says why)."""


def importable_base(machine: type) -> type:
    """The first class of `machine`'s MRO that its module names.

    A test's subclass made with `type(...)` is not importable; its base is.
    """
    for cls in machine.__mro__:
        module = sys.modules.get(cls.__module__)
        named: object = getattr(module, cls.__qualname__, None)
        if module is not None and named is cls:
            return cls
    raise ProgramError(f"no class of {machine.__name__}'s MRO can be imported")


def _import_line(name: str, found: object) -> str | None:
    """`from MODULE import NAME` (or `import NAME`) for `found`, if it has one."""
    if isinstance(found, type(builtins)):
        return f"import {name}"
    module = getattr(found, "__module__", None)
    if module is None or getattr(found, "__name__", None) != name:
        return None
    if getattr(sys.modules.get(module), name, None) is not found:
        return None
    return f"from {module} import {name}"


def imports_for(lines: Sequence[str], machine: type) -> list[str]:
    """The imports the names in `lines` need, as the machine's modules see them.

    A printed value is written as its constructor (`Target(worker=1, ...)`),
    and the machine's module imported every type it draws; the names are
    looked up there (every module of the machine's MRO, then
    `stateful.machine` for `drawn`).
    """
    namespaces: list[Mapping[str, Any]] = [
        vars(sys.modules[cls.__module__])
        for cls in machine.__mro__
        if cls.__module__ in sys.modules
    ]
    namespaces.append(vars(importlib.import_module("stateful.machine")))
    found: set[str] = set()
    for name in sorted({m for line in lines for m in _NAME_USED.findall(line)}):
        if name == "state" or hasattr(builtins, name):
            continue
        for namespace in namespaces:
            if name in namespace:
                line = _import_line(name, namespace[name])
                if line is not None:
                    found.add(line)
                break
    return sorted(found)


def factory_lines(subject: str, against: str, factory: object, base: type) -> list[str]:
    """The class body line that gives the machine its system under test."""
    if getattr(base, "factory", None) is factory:
        return []
    if against.startswith("canary:"):
        name = against.removeprefix("canary:")
        return [
            f"{INDENT}factory = staticmethod(",
            f"{INDENT}{INDENT}subjects.entry({subject!r}).canary_factories()[{name!r}]",
            f"{INDENT})",
        ]
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if module is None or qualname is None:
        raise ProgramError(f"the system under test {against} cannot be named")
    found = f"importlib.import_module({module!r}).{qualname}"
    return [f"{INDENT}factory = staticmethod({found})"]


def script(
    *,
    machine: type,
    subject: str,
    against: str,
    factory: object,
    program: Sequence[str],
    build: Mapping[str, str],
    comments: Sequence[str] = (),
) -> str:
    """`program.py`: the printed `program` as a script that reruns it.

    `program` is what Hypothesis printed, one step per item (a step may span
    lines), starting with `state = MACHINE()`.
    """
    if not program or not _FIRST_LINE.match(program[0]):
        raise ProgramError("the printed program does not start with `state = ...()`")
    base = importable_base(machine)
    steps = list(program[1:])
    body = ["state = Machine()", *steps]
    header = [
        "# ruff: noqa",
        *(f"# {comment}" for comment in comments),
        "# Rerun it from the root of the checkout that built it (exit 1: it fails).",
        "import importlib",
        "import sys",
        "from pathlib import Path",
        "",
        "sys.path.insert(0, str(Path.cwd()))",
        "try:",
        f"{INDENT}from ci import subjects",
        f"{INDENT}from ci.replay.program import rerun",
        f"{INDENT}from {base.__module__} import {base.__qualname__}",
        *(f"{INDENT}{line}" for line in imports_for(steps, machine)),
        "except ModuleNotFoundError as error:",
        f"{INDENT}sys.exit(f{RUN_FROM_ROOT!r})",
        "",
        f"BUILD = {dict(sorted(build.items()))!r}",
        '"""The build of the crate the failure was found on."""',
        "",
        "",
        f"class Machine({base.__qualname__}):",
        f'{INDENT}"""{machine.__name__} as the test made it."""',
        *factory_lines(subject, against, factory, base),
        "",
        "",
        "def program() -> None:",
        *(f"{INDENT}{line}" for step in body for line in step.splitlines()),
        "",
        "",
        'if __name__ == "__main__":',
        f"{INDENT}sys.exit(rerun(program, BUILD))",
    ]
    return "\n".join(header) + "\n"


def crate_versions() -> dict[str, Any]:
    """The crate's version and source, if the binding is built."""
    try:
        from impl import adapter  # noqa: PLC0415 - the binding may not be built
    except ImportError:
        return {"crate_version": "unknown", "crate_source": "unknown"}
    return {
        "crate_version": adapter.CRATE_VERSION,
        "crate_source": adapter.CRATE_SOURCE,
    }


def build_mismatch(build: Mapping[str, str]) -> str | None:
    """Why this checkout's binding is not `build` (None: it is)."""
    found = crate_versions()
    wanted = {key: build.get(key) for key in sorted(found)}
    if wanted == found:
        return None
    return (
        f"the program was found on dynamo-kv-router {wanted.get('crate_version')} "
        f"({wanted.get('crate_source')}); this checkout's binding is "
        f"{found['crate_version']} ({found['crate_source']})"
    )


def rerun(program: Callable[[], None], build: Mapping[str, str]) -> int:
    """Run `program` once, as Hypothesis ran it (its notes and events work).

    Exit status: 1 with the failure printed when it reproduces, 0 when the
    program passed, 2 with one line when the binding is not `build`.
    """
    mismatch = build_mismatch(build)
    if mismatch is not None:
        print(f"program.py: error: {mismatch}", file=sys.stderr)
        return 2

    @settings(database=None, deadline=None, phases=(Phase.explicit,))
    @given(st.none())
    @example(None)
    def the_program(_: None) -> None:
        program()

    try:
        the_program()
    except AssertionError as error:
        traceback.print_exception(error)
        print("program.py: the failure reproduces", file=sys.stderr)
        return 1
    print("program.py: the program passed (the failure did not reproduce)")
    return 0
