"""The auditors' dossier: per property, its citations, counts and one witness.

`plugin.py` (a pytest plugin) turns each machine run's witnesses into traces
beside the gate's statistics; `build.py` merges the gate's records into
`dossier.md` and `dossier.json`, adds witnesses found in the corpus for
properties the machines left without one, and replays every witness trace.
"""
