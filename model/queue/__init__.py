"""The reference model of `PolicyQueue`: types, operations, the queue."""
