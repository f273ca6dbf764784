"""The replica network: in-flight updates between affinity tables, and its steps."""
