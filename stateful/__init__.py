"""Hypothesis state machines: the model and a system under test in lockstep."""
