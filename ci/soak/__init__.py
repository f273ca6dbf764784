"""The false-alarm soak (`python -m ci.soak`): see `ci.soak.command`."""
