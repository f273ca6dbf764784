"""Affinity properties: TTL, leases, conservation, replication, coverage goals."""
