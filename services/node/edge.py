"""An edge node's settings: the embedded node with an upstream to sync with, and the edge profile's defaults."""

from __future__ import annotations

import os
from collections.abc import Mapping

from engram.config import Settings, SettingsError

# What `engram edge` changes from the embedded node's defaults (docs/operations.md, "Edge devices"), unless the
# environment sets it: the index keeps its dense vectors on disk and searches int8 copies in memory, and the
# scheduled consolidation (dedupe, merges, decay of the shared memory) is the cluster's to run.
EDGE_PROFILE: dict[str, object] = {"index_vectors": "disk", "consolidation_interval_seconds": 0.0}


def edge_settings(settings: Settings, env: Mapping[str, str] | None = None) -> Settings:
    """The settings of an edge node: an upstream is required, and the edge profile applies where the environment
    does not say otherwise."""
    if not settings.upstream:
        raise SettingsError(
            "engram edge needs the cluster's URL: `engram edge --upstream https://engram.example.com --key <sync key>` "
            "(or ENGRAM_UPSTREAM). Create the key on the cluster: "
            "`engram keys create --namespace <ns> --agent <agent> --device <device> --scopes sync`."
        )
    env = os.environ if env is None else env
    profile = {name: value for name, value in EDGE_PROFILE.items() if f"ENGRAM_{name.upper()}" not in env}
    return settings.replace(**profile)
