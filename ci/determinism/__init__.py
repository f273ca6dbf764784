"""Double-run determinism (`python -m ci.determinism`): see `ci.determinism.command`."""
