"""Distributed fuzzing of the machines (`python -m ci.fuzz`): see `ci.fuzz.command`."""
