"""The reference model of `SessionAffinity`: types, operations, the table."""
