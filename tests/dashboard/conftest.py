"""Fixtures shared by the dashboard tests that need the real job."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.dashboard.realjob import RealJob, real_job_fixture


@pytest.fixture(scope="package")
def real_job(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealJob]:
    """One ``groupwatch run`` for the browser and alert tests alike: Spark's start-up is most
    of their cost on two cores. Package scope stops it after the last dashboard test, so it
    does not compete with the Spark tests that run later in the session."""
    yield from real_job_fixture(broker, tmp_path_factory.mktemp("realjob"))
