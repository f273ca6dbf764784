"""Entry points for CI and developers: profiles, gate, replay, exploration."""
