"""Mutation testing of the crate (`python -m ci.mutants`)."""
