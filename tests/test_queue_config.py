"""Policy YAML rules of dynamo-kv-router 1.6.1 (SPEC A.5), through the binding.

Every validation rule that 1.6.1's `policy_config.rs` has gives
`PolicyConfigError` with stage "validation"; serde failures (syntax, unknown
or missing fields, wrong types) give stage "parse"; an unreadable file gives
stage "read". SPEC A.5's CFG-admission / CFG-selection keys
(`queue_admission`, `busy_worker_ratio`) are unknown to 1.6.1 and so are
parse errors. The model has no YAML parser: these run against the crate only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from model.errors import PolicyConfigError
from model.queue.types import ClassConfig

if TYPE_CHECKING:
    from pathlib import Path

    from impl.adapter import CratePolicyQueue

pytestmark = pytest.mark.crate

BUCKETS = "uncached_isl_buckets: [{min_tokens: 0, bucket: all}]\n"
CLASS_A = "  - {name: a, policy_family: a, cache_bucket: all, quantum: 10}\n"
MINIMAL = "default_policy_family: a\n" + BUCKETS + "policy_classes:\n" + CLASS_A


def _root(classes: str, buckets: str = BUCKETS, family: str = "a") -> str:
    return f"default_policy_family: {family}\n{buckets}policy_classes:\n{classes}"


def _class(extra: str) -> str:
    return f"  - {{name: a, policy_family: a, cache_bucket: all, quantum: 10{extra}}}\n"


PARSE_ERRORS = {
    "yaml syntax": 'models: "unterminated\n',
    "unknown top-level field": MINIMAL + "surprise: 1\n",
    "unknown class field": _root(_class(", surprise: 1")),
    "queue_admission is not a 1.6.1 key": _root(
        _class(", queue_admission: {type: session_aware}")
    ),
    "busy_worker_ratio is not a 1.6.1 key": _root(_class(", busy_worker_ratio: 0.5")),
    "quantum of the wrong type": _root(_class("").replace("quantum: 10", "quantum: x")),
    "negative quantum": _root(_class("").replace("quantum: 10", "quantum: -1")),
    "negative limit": _root(_class(", request_queue_limit_per_worker: -1")),
    "unknown queue policy": _root(_class(", queue_policy: edf")),
    "class without name": _root(
        "  - {policy_family: a, cache_bucket: all, quantum: 1}\n"
    ),
    "class without quantum": _root(
        "  - {name: a, policy_family: a, cache_bucket: all}\n"
    ),
    "bucket without min_tokens": _root(
        CLASS_A, buckets="uncached_isl_buckets: [{bucket: all}]\n"
    ),
    "bucket without name": _root(
        CLASS_A, buckets="uncached_isl_buckets: [{min_tokens: 0}]\n"
    ),
    "model profile missing a key": "models:\n  m:\n    default_policy_family: a\n",
}

VALIDATION_ERRORS = {
    "partial root profile": "default_policy_family: a\n" + BUCKETS,
    "empty model name": 'models:\n  "":\n'
    + "".join("    " + line + "\n" for line in MINIMAL.splitlines()),
    "nothing configured": "{}\n",
    "class name outside [A-Za-z0-9_.-]": _root(
        "  - {name: a b, policy_family: a, cache_bucket: all, quantum: 1}\n"
    ),
    "empty class name": _root(
        '  - {name: "", policy_family: a, cache_bucket: all, quantum: 1}\n'
    ),
    "family name outside the alphabet": _root(
        "  - {name: a, policy_family: a/b, cache_bucket: all, quantum: 1}\n",
        family="a/b",
    ),
    "bucket name outside the alphabet": _root(
        "  - {name: a, policy_family: a, cache_bucket: 'b c', quantum: 1}\n",
        buckets="uncached_isl_buckets: [{min_tokens: 0, bucket: 'b c'}]\n",
    ),
    "no classes": _root("", buckets=BUCKETS).replace(
        "policy_classes:\n", "policy_classes: []\n"
    ),
    "no buckets": _root(CLASS_A, buckets="uncached_isl_buckets: []\n"),
    "first bucket above zero": _root(
        CLASS_A, buckets="uncached_isl_buckets: [{min_tokens: 1, bucket: all}]\n"
    ),
    "buckets not strictly increasing": _root(
        CLASS_A,
        buckets="uncached_isl_buckets: [{min_tokens: 0, bucket: all},"
        " {min_tokens: 0, bucket: big}]\n",
    ),
    "duplicate bucket": _root(
        CLASS_A,
        buckets="uncached_isl_buckets: [{min_tokens: 0, bucket: all},"
        " {min_tokens: 5, bucket: all}]\n",
    ),
    "duplicate class": _root(CLASS_A + "  - {name: a, quantum: 1}\n"),
    "duplicate family and bucket": _root(
        CLASS_A + "  - {name: b, policy_family: a, cache_bucket: all, quantum: 1}\n"
    ),
    "zero quantum": _root(_class("").replace("quantum: 10", "quantum: 0")),
    "lcfs in yaml": _root(_class(", queue_policy: lcfs")),
    "busy fraction not finite": _root(_class(", prefill_busy_threshold_frac: .nan")),
    "busy fraction infinite": _root(_class(", prefill_busy_threshold_frac: .inf")),
    "busy fraction negative": _root(_class(", prefill_busy_threshold_frac: -0.5")),
    "family without bucket": _root(
        CLASS_A + "  - {name: b, policy_family: b, quantum: 1}\n"
    ),
    "bucket without family": _root(
        CLASS_A + "  - {name: b, cache_bucket: all, quantum: 1}\n"
    ),
    "unknown bucket": _root(
        CLASS_A + "  - {name: b, policy_family: b, cache_bucket: big, quantum: 1}\n"
    ),
    "default family names no class": _root(CLASS_A, family="z"),
    "incomplete family by bucket matrix": _root(
        CLASS_A + "  - {name: b, policy_family: b, cache_bucket: small, quantum: 1}\n",
        buckets="uncached_isl_buckets: [{min_tokens: 0, bucket: all},"
        " {min_tokens: 8, bucket: small}]\n",
    ),
    "unknown router setting": "router: {no_such_setting: 1}\n",
}
VALIDATION_ERRORS["explicit class named like a family"] = _root(
    CLASS_A
    + "  - {name: x, policy_family: b, cache_bucket: all, quantum: 1}\n"
    + "  - {name: b, quantum: 1}\n"
)

RULE_WORDING = {
    "partial root profile": "root profile must specify default_policy_family",
    "empty model name": "model profile name must not be empty",
    "nothing configured": "router policy config must define router settings",
    "class name outside [A-Za-z0-9_.-]": 'policy class name "a b" must match',
    "empty class name": 'policy class name "" must match',
    "family name outside the alphabet": 'policy family name "a/b" must match',
    "bucket name outside the alphabet": 'cache bucket name "b c" must match',
    "no classes": "policy_classes must not be empty",
    "no buckets": "uncached_isl_buckets must not be empty",
    "first bucket above zero": "must start at min_tokens 0",
    "buckets not strictly increasing": "min_tokens must be strictly increasing",
    "duplicate bucket": 'duplicate cache bucket "all"',
    "duplicate class": 'duplicate policy class "a"',
    "duplicate family and bucket": 'duplicate policy classes for family "a"',
    "zero quantum": "quantum must be greater than zero",
    "lcfs in yaml": "queue_policy must be fcfs or wspt",
    "busy fraction not finite": "prefill_busy_threshold_frac must be finite",
    "busy fraction infinite": "prefill_busy_threshold_frac must be finite",
    "busy fraction negative": "prefill_busy_threshold_frac must be finite",
    "family without bucket": "must specify both policy_family and cache_bucket",
    "bucket without family": "must specify both policy_family and cache_bucket",
    "unknown bucket": 'references unknown cache bucket "big"',
    "default family names no class": '"z" does not name a configured family',
    "explicit class named like a family": 'class "b" collides with a policy family',
    "incomplete family by bucket matrix": "is missing a policy class for family",
    "unknown router setting": "unknown router setting: no_such_setting",
}
"""The crate's wording for the rule each invalid document breaks."""


def _crate_queue() -> type[CratePolicyQueue]:
    from impl.adapter import CratePolicyQueue  # noqa: PLC0415 - crate tests only

    return CratePolicyQueue


@pytest.mark.parametrize("name", sorted(PARSE_ERRORS))
def test_a_malformed_document_is_a_parse_error(name: str) -> None:
    """Syntax, unknown keys, wrong types and missing keys fail at the parse stage."""
    with pytest.raises(PolicyConfigError) as raised:
        _crate_queue().from_yaml(PARSE_ERRORS[name])

    assert "parse" == raised.value.stage
    assert "failed to parse router policy config <inline>" in raised.value.message


@pytest.mark.parametrize("name", sorted(VALIDATION_ERRORS))
def test_a_well_formed_but_invalid_document_is_a_validation_error(name: str) -> None:
    """Each 1.6.1 validation rule rejects its document at the validation stage."""
    with pytest.raises(PolicyConfigError) as raised:
        _crate_queue().from_yaml(VALIDATION_ERRORS[name])

    assert "validation" == raised.value.stage
    assert raised.value.message.startswith("invalid router policy config: ")
    assert RULE_WORDING[name] in raised.value.message


def test_every_invalid_document_names_its_rule() -> None:
    """The wording table covers exactly the invalid documents."""
    assert sorted(VALIDATION_ERRORS) == sorted(RULE_WORDING)


def test_an_unreadable_file_is_a_read_error(tmp_path: Path) -> None:
    """`from_path` on a missing file fails at the read stage."""
    with pytest.raises(PolicyConfigError) as raised:
        _crate_queue().from_path(str(tmp_path / "missing.yaml"))

    assert "read" == raised.value.stage


def test_a_file_with_a_bad_document_is_a_parse_error_naming_the_path(
    tmp_path: Path,
) -> None:
    """`from_path` reports parse errors with the file's path, not `<inline>`."""
    path = tmp_path / "policy.yaml"
    path.write_text(PARSE_ERRORS["unknown top-level field"])

    with pytest.raises(PolicyConfigError) as raised:
        _crate_queue().from_path(str(path))

    assert "parse" == raised.value.stage
    assert str(path) in raised.value.message


def test_the_minimal_document_builds_one_class() -> None:
    """SPEC A.5's minimal document is accepted and yields class `a`."""
    queue = _crate_queue().from_yaml(MINIMAL)

    assert [ClassConfig("a", "fcfs", 10)] == [queue.class_config(0)]
    assert 1 == queue.class_count()


def test_an_unmatched_model_without_root_falls_back_to_the_synthetic_profile() -> None:
    """A models-only document resolves an unknown model to `synthetic(fallback)`."""
    text = "models:\n  m:\n" + "".join(
        "    " + ln + "\n" for ln in MINIMAL.splitlines()
    )

    queue = _crate_queue().from_yaml(text, "other", None, "lcfs")

    assert [ClassConfig("default", "lcfs", 1)] == [queue.class_config(0)]


def test_a_model_profile_replaces_the_root() -> None:
    """A matching model profile is used instead of the root profile, whole."""
    model_doc = MINIMAL.replace("quantum: 10", "quantum: 3")
    text = (
        MINIMAL
        + "models:\n  m:\n"
        + "".join("    " + ln + "\n" for ln in model_doc.splitlines())
    )

    chosen = _crate_queue().from_yaml(text, "m").class_config(0)
    root = _crate_queue().from_yaml(text, "other").class_config(0)

    assert 3 == chosen.quantum
    assert 10 == root.quantum


def test_the_synthetic_profile_accepts_lcfs() -> None:
    """`PolicyProfile::synthetic` builds one class, quantum 1, any policy."""
    queue = _crate_queue().synthetic(None, "lcfs")

    assert [ClassConfig("default", "lcfs", 1)] == [queue.class_config(0)]
