"""System under test: the adapter over the compiled `dynamo-kv-router` binding."""

from impl.adapter import NativeAffinity

__all__ = ["NativeAffinity"]
