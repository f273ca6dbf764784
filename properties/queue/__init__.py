"""Policy-queue properties: ordering, conservation, limits, coverage goals."""
