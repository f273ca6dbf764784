"""Bounded exhaustive exploration of the reference model (`python -m ci.explore`)."""
