"""Shared parts of `ci.fuzz`, `ci.soak` and `ci.determinism`.

Each of those commands runs the machines' own pytest tests, by node id, in
fresh `python -m pytest` processes that load the plugin `ci.trust.plugin`:

* `machine_tests` -- the machine tests by name and the pytest node ids they run;
* `database` -- the shared example database (Redis, with a local directory
  beside it that stays the fallback);
* `plugin` -- loads a run's settings (derived from `ci/profiles.py`), counts
  test cases and behaviours, writes step logs and a per-test result file;
* `options` -- `--tests` and the artifact folders, read one way by all three;
* `runner` -- starts such a pytest process and reads its result and artifacts;
* `canary_tests` -- machine tests that are deliberately broken
  (collected only when named).
"""
