"""System under test: the adapter over the compiled `dynamo-kv-router` binding."""

from impl.adapter import NativeAffinity, NativePolicyQueue

__all__ = ["NativeAffinity", "NativePolicyQueue"]
