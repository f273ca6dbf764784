r"""Our own source mutants of the pinned crate: what cargo-mutants does not make.

The mutant set is cargo-mutants' (`ci/mutants/cargo_mutants.py`) plus these;
any of ours whose mutated file equals one of cargo-mutants' is dropped there.
The generator reads Rust text, not a syntax tree: comments, string and char
literals are first blanked out (`mask`), so the operators below only ever see
code. Whatever does not compile afterwards is counted as unviable by the
runner, so the operators may be approximate but must be deterministic.

Never mutated (by either generator): the `#[cfg(test)] mod tests` module and
every other item behind `cfg(test)` or `cfg(any(test, ...))` (test hooks are
not production code), attributes, and the arguments of `tracing::*!` and
`debug_assert*!` (logging and debug-only checks; release builds ignore both).

Operators, and the part of each that cargo-mutants 27.1.0 does not generate
(the only part that stays in the set):

- `cmp_boundary`: `<`/`<=`, `>`/`>=` swap. Left: `<=` to `<` and `>=` to `>`.
- `cmp_negate`: a comparison becomes its complement. Left: `<` to `>=`,
  `>` to `<=`, and any comparison inside a macro call (`matches!`).
- `logic_swap`: `&&` and `||` swap. Left: inside a macro call.
- `bool_negate`: an `if` or match-guard condition, or a `!x`, is negated.
  Left: negated conditions (cargo-mutants only deletes a `!`).
- `bool_literal`: `true` and `false` swap. All (no literal mutants there).
- `literal`: an integer literal moves by +1 or -1. All.
- `stmt_delete`: one statement is removed. All (it only replaces whole bodies).
- `swap_call`: `min`/`max`, `first`/`last`, `fetch_add`/`fetch_sub`, ... All.

Removed when cargo-mutants took over: `arith_swap` (`+`/`-`, `+=`/`-=`: every
one of its mutants was also one of cargo-mutants') and `early_return` (a
default `return` at the top of a function: cargo-mutants' `FnValue` replaces
the same functions' bodies with the same values).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ci import subjects

# The mutated files, relative to the crate root, with a one-letter id prefix
# (the subjects' `crate_files` in the registry).
TARGET_FILES: Mapping[str, str] = subjects.CrateFileView(lambda file: file.prefix)
MUTANTS_PER_FILE_MAX = 2_000  # a generator bug must not produce a runaway list
STATEMENT_LINES_MAX = 15  # longer statements are not offered for deletion

_CHAR_LITERAL = re.compile(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'")
_RAW_STRING = re.compile(r'b?r(#*)"')


@dataclass(frozen=True, order=True)
class Mutant:
    """One textual change to one file of the crate."""

    file: str  # path relative to the crate root
    start: int  # character offset of the replaced text
    end: int  # offset just past it
    operator: str
    original: str
    replacement: str
    line: int  # 1-based line of `start`
    id: str = ""  # assigned with the set, e.g. "CA017" (`ci/mutants/cargo_mutants.py`)
    name: str = ""  # the generator's description, when it gives one

    def apply(self, text: str) -> str:
        """`text` with this mutant applied; `text` must be the pristine file."""
        if text[self.start : self.end] != self.original:
            raise ValueError(f"{self.id}: {self.file} is not the pristine source")
        return text[: self.start] + self.replacement + text[self.end :]

    def describe(self) -> str:
        """One line: where and what, e.g. `affinity.rs:517 cmp_boundary '<=' -> '<'`."""
        if self.name:
            return self.name
        return _describe(
            self.file, self.line, self.operator, self.original, self.replacement
        )

    def diff(self, text: str) -> str:
        """A unified diff (one line of context) of this mutant against `text`."""
        return "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                self.apply(text).splitlines(keepends=True),
                fromfile=f"a/{self.file}",
                tofile=f"b/{self.file}",
                n=1,
            )
        )


def _comment_end(text: str, index: int) -> int | None:
    """End of the comment starting at `index` (block comments nest), if any."""
    if text.startswith("//", index):
        stop = text.find("\n", index)
        return len(text) if stop < 0 else stop
    if not text.startswith("/*", index):
        return None
    depth, position = 1, index + 2
    while position < len(text) and depth:
        if text.startswith("/*", position):
            depth, position = depth + 1, position + 2
        elif text.startswith("*/", position):
            depth, position = depth - 1, position + 2
        else:
            position += 1
    return position


def _literal_end(text: str, index: int) -> int | None:
    """End of the string or char literal starting at `index`, if any."""
    identifier_before = index > 0 and (
        text[index - 1].isalnum() or text[index - 1] == "_"
    )
    if (raw := _RAW_STRING.match(text, index)) and not identifier_before:
        closing = '"' + raw.group(1)
        stop = text.find(closing, raw.end())
        return len(text) if stop < 0 else stop + len(closing)
    if text[index] == '"':
        position = index + 1
        while position < len(text) and text[position] != '"':
            position += 2 if text[position] == "\\" else 1
        return position + 1
    if text[index] == "'" and (literal := _CHAR_LITERAL.match(text, index)):
        return literal.end()
    return None  # a lifetime such as `'_`, or plain code


def mask(text: str) -> str:
    """`text` with comments and string/char literals blanked, newlines kept."""
    out = list(text)
    index = 0
    while index < len(text):
        stop = _comment_end(text, index)
        if stop is None:
            stop = _literal_end(text, index)
        if stop is None:
            index += 1
            continue
        for position in range(index, stop):
            if out[position] != "\n":
                out[position] = " "
        index = stop
    return "".join(out)


def _matching(masked: str, open_index: int) -> int:
    """Offset of the bracket closing the one at `open_index`."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    opening = masked[open_index]
    closing = pairs[opening]
    depth = 0
    for position in range(open_index, len(masked)):
        if masked[position] == opening:
            depth += 1
        elif masked[position] == closing:
            depth -= 1
            if depth == 0:
                return position
    raise ValueError(f"unbalanced {opening!r} at offset {open_index}")


def skipped_ranges(text: str) -> list[tuple[int, int]]:
    """Offsets of `text` never mutated: test-only items, attributes, logging macros."""
    masked = mask(text)
    ranges: list[tuple[int, int]] = []
    for attribute in re.finditer(r"#\[cfg\((?:test|any\(test\b)[^\]]*\]", masked):
        # The item after the attribute: up to its matching brace, or its `;`/`,`.
        item = attribute.end()
        brace = masked.find("{", item)
        stop_candidates = [
            position
            for position in (masked.find(";", item), masked.find(",", item))
            if position >= 0
        ]
        stop = min(stop_candidates) if stop_candidates else len(masked)
        end = _matching(masked, brace) + 1 if 0 <= brace < stop else stop + 1
        ranges.append((attribute.start(), end))
    # Attributes, then logging and debug-only macros: from the name to the
    # bracket closing the one the pattern ends on.
    for pattern in (r"#!?\[", r"\b(?:tracing::\w+|debug_assert\w*)!\s*[({]"):
        ranges.extend(
            (found.start(), _matching(masked, found.end() - 1) + 1)
            for found in re.finditer(pattern, masked)
        )
    return sorted(ranges)


def inside_skipped(ranges: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether the span `start:end` (an insertion when empty) touches a range."""
    end = max(end, start + 1)
    return any(low <= start < high or low < end <= high for low, high in ranges)


_COMPARISONS = {
    "<": (("cmp_boundary", "<="), ("cmp_negate", ">=")),
    "<=": (("cmp_boundary", "<"), ("cmp_negate", ">")),
    ">": (("cmp_boundary", ">="), ("cmp_negate", "<=")),
    ">=": (("cmp_boundary", ">"), ("cmp_negate", "<")),
    "==": (("cmp_negate", "!="),),
    "!=": (("cmp_negate", "=="),),
}
_CALL_SWAPS = {
    "min": "max",
    "max": "min",
    "first": "last",
    "last": "first",
    "pop_first": "pop_last",
    "pop_last": "pop_first",
    "fetch_add": "fetch_sub",
    "fetch_sub": "fetch_add",
    "fetch_max": "fetch_min",
    "saturating_add": "saturating_sub",
    "saturating_sub": "saturating_add",
    "saturating_mul": "saturating_add",
    "wrapping_add": "wrapping_sub",
}
_STATEMENT_KEYWORDS = (
    "let ",
    "let(",
    "return",
    "if ",
    "match ",
    "for ",
    "while ",
    "loop",
    "else",
    "use ",
    "pub",
    "fn ",
    "impl",
    "const ",
    "static ",
    "mod ",
    "type ",
    "struct ",
    "enum ",
    "trait ",
    "where",
    "#",
    "Ok(",
    "Err(",
    "Some(",
    "None",
    "break",
    "continue",
    "unreachable!",
    "panic!",
    "assert",
    "debug_assert",
    "tracing::",
    "}",
    ")",
    "]",
)
Edit = tuple[int, int, str, str]  # (start, end, operator, replacement)


def _comparisons(masked: str, _text: str) -> Iterator[Edit]:
    """`cmp_boundary` and `cmp_negate` on spaced binary comparisons (not generics)."""
    for found in re.finditer(r"(?<=[\w)\]] )(<=|>=|==|!=|<|>)(?= [\w(*&!-])", masked):
        for operator, replacement in _COMPARISONS[found.group(1)]:
            yield found.start(), found.end(), operator, replacement


def _logic(masked: str, _text: str) -> Iterator[Edit]:
    """`logic_swap` of `&&` and `||`; `bool_literal` of `true` and `false`."""
    for found in re.finditer(r" (&&|\|\|) ", masked):
        swapped = "||" if found.group(1) == "&&" else "&&"
        yield found.start(1), found.end(1), "logic_swap", swapped
    for found in re.finditer(r"\b(true|false)\b", masked):
        flipped = "false" if found.group(1) == "true" else "true"
        yield found.start(), found.end(), "bool_literal", flipped


def _negations(masked: str, text: str) -> Iterator[Edit]:
    """`bool_negate`: drop a prefix `!`, or negate an `if` or guard condition."""
    for found in re.finditer(r"(?<![\w!=)\]])!(?=[\w(*&])", masked):
        yield found.start(), found.end(), "bool_negate", ""
    for found in re.finditer(
        r"(?m)^[ \t]*(?:\} else )?if (?!let )(?P<c>[^{}\n]+?) \{$|"
        r"\bif (?!let )(?P<g>[^{}\n]+?) =>",
        masked,
    ):
        group = "c" if found.group("c") is not None else "g"
        start, end = found.start(group), found.end(group)
        if not text[start:end].startswith("!"):  # dropping that `!` is above
            yield start, end, "bool_negate", f"!({text[start:end]})"


def _literals(masked: str, _text: str) -> Iterator[Edit]:
    """`literal`: integers (not floats, suffixes or tuple fields) move by one."""
    for found in re.finditer(r"(?<![\w.])\d[\d_]*(?![\w.])", masked):
        value = int(found.group().replace("_", ""))
        yield found.start(), found.end(), "literal", str(value + 1)
        if value > 0:
            yield found.start(), found.end(), "literal", str(value - 1)


def _calls(masked: str, _text: str) -> Iterator[Edit]:
    """`swap_call` on method names (`min`/`max`, `fetch_add`/`fetch_sub`, ...)."""
    for found in re.finditer(r"\.(\w+)(?=\()", masked):
        swapped = _CALL_SWAPS.get(found.group(1))
        if swapped is not None:
            yield found.start(1), found.end(1), "swap_call", swapped


def _statement_deletions(masked: str, _text: str) -> Iterator[Edit]:
    """Whole statements (one or more lines) that end in `;` and can be removed."""
    lines = masked.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    previous = ""
    for first, line in enumerate(lines):
        stripped = line.strip()
        starts_statement = previous.endswith((";", "{", "}")) or previous == ""
        if (
            stripped
            and starts_statement
            and not stripped.startswith(_STATEMENT_KEYWORDS)
        ):
            last = _statement_end(lines, first)
            if last is not None:  # the whole lines, indentation and newline
                yield offsets[first], offsets[last + 1], "stmt_delete", ""
        if stripped:
            previous = stripped


def _statement_end(lines: list[str], first: int) -> int | None:
    """The last line of the statement starting at `first`, if it is a plain one."""
    depth = 0
    for index in range(first, min(first + STATEMENT_LINES_MAX, len(lines))):
        stripped = lines[index].strip()
        if "=>" in stripped and depth == 0:
            return None
        for char in stripped:
            depth += char in "([{"
            depth -= char in ")]}"
            if depth < 0:
                return None
        if depth == 0 and stripped.endswith(";"):
            return index
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if depth == 0 and not following.startswith((".", "?")):
            return None
    return None


_OPERATORS: tuple[Callable[[str, str], Iterator[Edit]], ...] = (
    _comparisons,
    _logic,
    _negations,
    _literals,
    _calls,
    _statement_deletions,
)


def generate_ours(crate_root: Path) -> list[Mutant]:
    """Our operators' mutants of the target files, each reduced to its minimal span.

    Ids (`OA001`, ...) are given later, with the set
    (`ci/mutants/cargo_mutants.py`), once cargo-mutants' duplicates are gone;
    here the order is deterministic (by file, then offset).
    """
    mutants: list[Mutant] = []
    for relative in TARGET_FILES:
        text = (crate_root / relative).read_text(encoding="utf-8")
        masked = mask(text)
        skipped = skipped_ranges(text)
        found = sorted(
            {
                edit
                for operator in _OPERATORS
                for edit in operator(masked, text)
                if not inside_skipped(skipped, edit[0], edit[1])
            }
        )
        if len(found) > MUTANTS_PER_FILE_MAX:
            raise ValueError(f"{relative}: {len(found)} mutants exceed the cap")
        for start, end, operator, replacement in found:
            mutated = text[:start] + replacement + text[end:]
            low, high, minimal = minimal_change(text, mutated)
            line = text.count("\n", 0, start) + 1
            mutants.append(
                Mutant(
                    file=relative,
                    start=low,
                    end=high,
                    operator=operator,
                    original=text[low:high],
                    replacement=minimal,
                    line=text.count("\n", 0, low) + 1,
                    # Named by the edit as the operator made it, not the
                    # reduced span (`'min' -> 'max'`, not `'in' -> 'ax'`).
                    name=_describe(
                        relative, line, operator, text[start:end], replacement
                    ),
                )
            )
    unique = {dataclasses.replace(m, name=""): m for m in reversed(mutants)}
    return sorted(
        unique.values(),
        key=lambda m: (m.file, m.start, m.end, m.replacement, m.operator),
    )


def _describe(relative: str, line: int, operator: str, old: str, new: str) -> str:
    """`affinity.rs:517 cmp_boundary '<=' -> '<'`, long sides clipped."""
    old, new = " ".join(old.split()), " ".join(new.split())
    old = old if len(old) <= 60 else old[:57] + "..."
    new = new if len(new) <= 60 else new[:57] + "..."
    return f"{Path(relative).name}:{line} {operator} {old!r} -> {new!r}"


def minimal_change(text: str, mutated: str) -> tuple[int, int, str]:
    """(start, end, replacement): the one span of `text` that `mutated` replaces.

    The longest common prefix, then the longest common suffix of the rest, so
    two generators' spellings of one change compare equal.
    """
    if text == mutated:
        raise ValueError("the mutant changes nothing")
    limit = min(len(text), len(mutated))
    low, high = 0, limit  # binary search with slice comparisons (C speed)
    while low < high:
        middle = (low + high + 1) // 2
        if text[:middle] == mutated[:middle]:
            low = middle
        else:
            high = middle - 1
    prefix = low
    low, high = 0, limit - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if text[len(text) - middle :] == mutated[len(mutated) - middle :]:
            low = middle
        else:
            high = middle - 1
    suffix = low
    return prefix, len(text) - suffix, mutated[prefix : len(mutated) - suffix]
