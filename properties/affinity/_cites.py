"""Citation prefixes the affinity property modules share.

`TABLE` is the reference model's table class (its functions are what the
properties read); `CRATE` is the crate module of `SessionAffinity` (its items
are what the properties guard). `properties.citations` resolves both.
"""

from __future__ import annotations

from typing import Final

TABLE: Final[str] = "model.affinity.table.ModelAffinity"
MODEL: Final[str] = "model.affinity.table"
CRATE: Final[str] = "services::selection::affinity"
AFFINITY: Final[str] = f"{CRATE}::SessionAffinity"
LEASE: Final[str] = f"{CRATE}::AffinityLease"
INIT: Final[str] = f"{CRATE}::AffinityInitialization"
INNER: Final[str] = f"{CRATE}::Inner"
