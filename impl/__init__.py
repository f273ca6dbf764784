"""System under test: the adapter over the compiled `dynamo-kv-router` binding.

`impl.adapter` is the one package that imports the binding.
"""
