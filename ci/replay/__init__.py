"""Traces and what is done with them: replay, minimize, artifacts, the corpus."""
