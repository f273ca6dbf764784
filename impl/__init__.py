"""System under test: the adapter over the compiled `dynamo-kv-router` binding.

`impl.adapter` is the one module that imports the extension.
"""
