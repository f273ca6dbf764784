"""Traces exported as self-contained Rust tests of the crate (`--emit rust`)."""
