"""Pure-Python reference models of dynamo-kv-router's affinity table and queue."""
