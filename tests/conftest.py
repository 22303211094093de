"""Test configuration: hypothesis profiles. Fixture helpers live in tests/hudi_fixtures.py."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("slow", max_examples=20_000, deadline=None)
settings.register_profile("hunt", max_examples=1500, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)
