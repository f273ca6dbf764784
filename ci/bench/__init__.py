"""Benchmarks: figures, never pass/fail (`python -m ci.bench SUBJECT`, ...)."""
