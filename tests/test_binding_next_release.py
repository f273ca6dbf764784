"""The binding survives what the next release is announced or allowed to change.

1.6.1 marks the root and `scheduling` re-exports of its plugin traits
"TODO(v1.7): Remove"; a release may add an enum variant. Neither changes what
the suite checks, so neither may stop the binding compiling: the binding
imports every crate item from the module that defines it, and every `match` on
a crate enum ends in an arm that names an unknown variant
(`impl/src/lib.rs::unknown_to_suite`). The import check reads the sources; the
build checks compile the binding against edited copies of the pinned crate
(seconds to a minute each: the crate copy and the binding, in the shared target
folder), so they are marked slow.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest
from checkout_support import add_enum_variant, copy_pinned_crate, delete_v17_reexports

from ci import build_local
from ci.target_dir import shared_target_dir

REPO: Final[Path] = Path(__file__).resolve().parent.parent
BINDING_SOURCES: Final[Path] = REPO / "impl" / "src"
CRATE_PATH: Final[str] = "dynamo_kv_router"
AFFINITY_RS: Final[Path] = Path("src/services/selection/affinity.rs")
MARKED: Final[re.Pattern[str]] = re.compile(
    r"// TODO\(v1\.7\): Remove these compatibility re-exports[^\n]*\n"
    r"pub use ([^;]*);"
)
USE: Final[re.Pattern[str]] = re.compile(r"\buse\s+(dynamo_kv_router::[^;]*);")


def _module_of(crate: Path, file: Path) -> str:
    """The crate path of the module `file` holds (`src/a/mod.rs` -> `crate::a`)."""
    parts = list(file.relative_to(crate / "src").with_suffix("").parts)
    if parts[-1] in {"lib", "mod"}:
        parts.pop()
    return "::".join([CRATE_PATH, *parts])


def _split_top(group: str) -> list[str]:
    """The comma-separated members of a `{...}` group's inside, nesting kept."""
    members, depth, current = [], 0, ""
    for char in group:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            members.append(current)
            current = ""
        else:
            current += char
    return [member for member in [*members, current] if member.strip()]


def _paths(tree: str, prefix: str = "") -> list[str]:
    """The full paths a `use` tree imports (`a::{b, c::{d}}` -> a::b, a::c::d).

    A renamed import (`x as y`) counts as its item `x`: what matters is the
    path it is taken from, not the local name.
    """
    tree = re.sub(r"\s+", " ", tree).strip()
    if tree.startswith("{") and tree.endswith("}"):
        return [
            path for member in _split_top(tree[1:-1]) for path in _paths(member, prefix)
        ]
    head, brace, rest = tree.partition("::{")
    if brace:
        return _paths("{" + rest, f"{prefix}{head.strip()}::")
    return [prefix + tree.split(" as ")[0].replace(" ", "")]


def _split(path: str) -> tuple[str, str]:
    module, _, name = path.rpartition("::")
    return module, name


def _imports(text: str) -> set[tuple[str, str]]:
    """(module, name) for each crate item a source's `use` statements import."""
    return {_split(path) for tree in USE.findall(text) for path in _paths(tree)}


def marked_reexports(crate: Path) -> set[tuple[str, str]]:
    """(module, name) for each re-export the crate marks "TODO(v1.7): Remove"."""
    marked = set()
    for file in sorted((crate / "src").rglob("*.rs")):
        module = _module_of(crate, file)
        for tree in MARKED.findall(file.read_text(encoding="utf-8")):
            marked |= {(module, _split(path)[1]) for path in _paths(tree)}
    return marked


def test_the_binding_imports_no_reexport_the_crate_marks_for_removal() -> None:
    """No `use` in impl/src names an item by a path 1.6.1 says v1.7 removes."""
    crate = build_local.pinned_source()
    marked = marked_reexports(crate)
    imported = {
        (module, name, source.name)
        for source in sorted(BINDING_SOURCES.glob("*.rs"))
        for module, name in _imports(source.read_text(encoding="utf-8"))
    }

    used = sorted(entry for entry in imported if entry[:2] in marked)

    assert (f"{CRATE_PATH}::scheduling", "ClassifyRequest") in marked
    assert (CRATE_PATH, "WorkerPicker") in marked
    assert [] == used


def test_the_import_reader_sees_a_marked_reexport() -> None:
    """The reader of `use` trees finds a root re-export inside a nested group."""
    text = (
        "use dynamo_kv_router::{\n    LocalScheduler, WorkerInputView as View,\n"
        "    scheduling::{config::RouterQueuePolicy, ClassifyRequest},\n};"
    )

    imported = _imports(text)

    assert (CRATE_PATH, "WorkerInputView") in imported
    assert (CRATE_PATH, "LocalScheduler") in imported
    assert (f"{CRATE_PATH}::scheduling", "ClassifyRequest") in imported
    assert (f"{CRATE_PATH}::scheduling::config", "RouterQueuePolicy") in imported


def _build(source: Path, work: Path) -> build_local.BuildResult:
    build = build_local.LocalBuild(
        source=source,
        binding_dir=work / "binding",
        target_dir=shared_target_dir(),
        features=build_local.detect_features(source),
    )
    build_local.seed_target_dir(build.target_dir, build.profile)
    return build_local.build_extension(build)


@pytest.mark.slow
def test_the_binding_builds_without_the_reexports_v1_7_removes(tmp_path: Path) -> None:
    """The binding builds against 1.6.1 with its "TODO(v1.7)" re-exports gone."""
    crate = copy_pinned_crate(tmp_path / "crate")
    edited = delete_v17_reexports(crate)

    result = _build(crate, tmp_path)

    assert len(edited) >= 1
    assert set() == marked_reexports(crate)
    assert result.ok, result.output[-4_000:]


@pytest.mark.slow
def test_the_binding_builds_against_a_crate_with_new_enum_variants(
    tmp_path: Path,
) -> None:
    """New variants of ReplicaApplyOutcome and SessionAffinityMode leave it building.

    (`AffinityError` would be the third, but the crate itself matches it
    exhaustively, so a new variant there is an edit of the crate's own code.)
    """
    crate = copy_pinned_crate(tmp_path / "crate")
    add_enum_variant(crate, AFFINITY_RS, "ReplicaApplyOutcome", "IgnoredUpstreamNew")
    add_enum_variant(crate, AFFINITY_RS, "SessionAffinityMode", "Advisory")

    result = _build(crate, tmp_path)

    assert result.ok, result.output[-4_000:]
