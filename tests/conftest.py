"""Shared fixtures: a real KRaft broker and a local SparkSession, each once per test session;
and the quick lane (``--quick``, what ``scripts/test --quick`` runs)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from groupwatch_dev import SHORT_LIVED_JVM
from groupwatch_dev.broker import DEFAULT_KAFKA_VERSION, KAFKA_VERSIONS, NEWEST_KAFKA_VERSION

# Every `groupwatch run` a test starts (and the cluster test's driver) inherits this: Spark's
# launcher adds SPARK_SUBMIT_OPTS to the driver's command, so they run with the short-lived JVM
# options. The session's own SparkSession is started without them (the `spark` fixture). A
# value set outside is kept, for both.
SHORT_LIVED_SPARK = " ".join(SHORT_LIVED_JVM)
os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_LIVED_SPARK)

# Property tests must give the same verdict on every run: CI derandomizes them.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# The quick lane is the inner loop: the pure tests, with nothing that starts a JVM (a broker, a
# SparkSession, Kafka's own classes). It only ever leaves tests out under --quick; without the
# flag the hooks below return at once, so the full run collects exactly what it collected before.
QUICK_LANE_ENV = "GROUPWATCH_QUICK_LANE"
# Markers of tests that start a JVM or drive something outside the process tree of pytest.
NOT_QUICK_MARKERS = ("slow", "broker", "spark", "oracle", "browser", "fleet")
# Fixtures that start a JVM: a test that asks for one is not quick, marked or not.
NOT_QUICK_FIXTURES = ("broker", "broker44", "any_broker", "spark", "spark_workdir")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        default=False,
        help="the quick lane: leave out tests marked "
        + "/".join(NOT_QUICK_MARKERS)
        + " or using the broker or spark fixture; starting a JVM anyway fails the test",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("quick"):
        # Seen by tests/jvm.py too, so Kafka's classes refuse to start in this lane.
        os.environ[QUICK_LANE_ENV] = "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = long_first(items)
    if not config.getoption("quick"):
        return
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        marked = any(item.get_closest_marker(name) for name in NOT_QUICK_MARKERS)
        fixtures = set(getattr(item, "fixturenames", ()))
        (left if marked or fixtures.intersection(NOT_QUICK_FIXTURES) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


# A parallel run (`GROUPWATCH_TEST_WORKERS=2 scripts/test`, pytest-xdist) gives a whole module
# to one worker, its module fixtures made once. Modules that share a session or package
# fixture's expensive run go to the same worker as one unit, or each worker would make it again.
SHARED_RUNS = {
    "tests/integration/test_crash_safety.py": "crash_runs",
    "tests/integration/test_crash_after_many_batches.py": "crash_runs",
    "tests/dashboard/test_alert_e2e.py": "real_job",
    "tests/dashboard/test_browser.py": "real_job",
    "tests/dashboard/test_job_metrics.py": "real_job",
}


#: Modules that go with a shared run's unit, one after the other on its worker, though they
#: share no fixture: the job killed on S3 with the local crash runs (the two at once on the
#: two workers slowed each other, docs/testing.md).
TOGETHER = {"tests/s3/test_crash_on_s3.py": "crash_runs"}

#: The units sent first, in this order: the longest of a default run (docs/testing.md, "What
#: the default lane spends its time on"), so that none of them starts last while the other
#: worker runs out of work. The other units follow, those of most tests first (xdist's order).
LONG_FIRST = (
    "crash_runs",
    "tests/integration/test_job_scenarios.py",
    "tests/integration/test_share_state_broker.py",
    "tests/integration/test_legacy_clients.py",
    "tests/modern/test_modern_groups.py",
    "tests/integration/test_cluster.py",
    "tests/integration/test_committed_newest.py",
    "tests/integration/test_rebalance_stuck.py",
    "tests/integration/test_broker_restart.py",
    "tests/s3/test_upkeep_on_s3.py",
    "tests/integration/test_job_real_groups.py",
    "tests/dashboard/test_browser_fleet.py",
    "tests/integration/test_driver_tally.py",
    "tests/integration/test_rollout_stuck.py",
)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to in a parallel run: its module, or the shared run."""
    path = nodeid.split("::", 1)[0]
    return SHARED_RUNS.get(path) or TOGETHER.get(path) or path


def long_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items unit by unit, the units of :data:`LONG_FIRST` first, then the others by their
    number of tests (most first, otherwise as collected); each unit's items as collected.
    Every worker orders its collection so (they must agree), and the scheduler keeps it."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(unit_of(item.nodeid), []).append(item)
    rank = {unit: i for i, unit in enumerate(LONG_FIRST)}
    ordered = sorted(units.items(), key=lambda kv: (rank.get(kv[0], len(rank)), -len(kv[1])))
    return [item for _, unit in ordered for item in unit]


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # the parallel run's plugin is a dev dependency
    pass
else:

    class SharedRunScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """Whole modules per worker (as ``--dist loadfile``), the shared runs' modules as one
        unit; the units in the order the workers collected them (:func:`long_first`)."""

        def __init__(self, config: pytest.Config, log: object = None) -> None:
            super().__init__(config, log)
            # xdist's own order (most tests first) would put the long single-test units last.
            config.option.loadscopereorder = False

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> SharedRunScheduling:
        return SharedRunScheduling(config, log)


def refuse_in_quick_lane(what: str) -> None:
    """Fail (never skip) a test of the quick lane that starts ``what``: it needs a marker."""
    if os.environ.get(QUICK_LANE_ENV):
        pytest.fail(
            f"the quick lane must not start {what}: mark the test "
            + " or ".join(NOT_QUICK_MARKERS[1:4])
        )


def local_broker(name: str, kafka_version: str | None = None) -> Iterator[str]:
    """A fresh single-node broker on loopback named ``name``, removed after; yields its
    bootstrap (the body of a broker fixture). ``kafka_version``: the release (default 4.3.1)."""
    from groupwatch_dev.broker import LocalBroker

    refuse_in_quick_lane("a Kafka broker")

    local = LocalBroker(
        name, kafka_version=kafka_version or DEFAULT_KAFKA_VERSION, jvm_options=SHORT_LIVED_JVM
    )
    try:
        state = local.start(fresh=True)
    except Exception as exc:  # noqa: BLE001 - report the broker's own words
        pytest.fail(f"the test broker did not start: {exc}")
    yield state.bootstrap
    local.stop()
    shutil.rmtree(local.dir, ignore_errors=True)


#: The release of the session's broker: the default, or another of the project's releases
#: (``GROUPWATCH_TEST_KAFKA=4.4.0 scripts/test tests/fleet``: the real-client suites on the
#: newest broker; docs/testing.md).
SESSION_KAFKA_ENV = "GROUPWATCH_TEST_KAFKA"


def session_kafka_version() -> str:
    version = os.environ.get(SESSION_KAFKA_ENV) or DEFAULT_KAFKA_VERSION
    if version not in KAFKA_VERSIONS:
        raise pytest.UsageError(f"{SESSION_KAFKA_ENV}={version}: not one of {KAFKA_VERSIONS}")
    return version


@pytest.fixture(scope="session")
def broker() -> Iterator[str]:
    """A fresh single-node broker on loopback for this test session (the release
    ``GROUPWATCH_TEST_KAFKA`` names, default 4.3.1); yields its bootstrap."""
    yield from local_broker(f"pytest-{os.getpid()}", session_kafka_version())


@pytest.fixture(scope="session")
def broker44() -> Iterator[str]:
    """A fresh broker of the newest release (Kafka 4.4.0, share.version=2) for this test
    session; yields its bootstrap."""
    yield from local_broker(f"pytest44-{os.getpid()}", NEWEST_KAFKA_VERSION)


@pytest.fixture(scope="session", params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def any_broker(request: pytest.FixtureRequest) -> tuple[str, str]:
    """Each of the project's Kafka releases in turn: (release, bootstrap). A test that asks for
    it runs once on a broker of the default release (not the session's ``broker``) and once on
    the newest (each started once a session)."""
    version: str = request.param
    name = "broker431" if version == DEFAULT_KAFKA_VERSION else "broker44"
    return version, request.getfixturevalue(name)


@pytest.fixture(scope="session")
def broker431() -> Iterator[str]:
    """A broker of the default release apart from the session's ``broker``, for the tests run
    on each release: their share groups leave poison records, stalls and skipped partitions in
    ``__share_group_state``, which every job over the session's broker reads (the topic is read
    by default), and no other test's job may find them."""
    yield from local_broker(f"pytest431-{os.getpid()}")


@pytest.fixture(scope="session")
def spark_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="session")
def spark(spark_workdir: Path):  # type: ignore[no-untyped-def]
    """One local SparkSession with the project's jars; Ivy is pointed at a folder we watch."""
    from groupwatch import config
    from groupwatch.spark.session import build_session

    refuse_in_quick_lane("a SparkSession")
    cfg = config.load(
        None,
        env={},
        overrides=[
            "spark.master=local[2]",
            "spark.shuffle_partitions=2",
            f'spark.conf={{"spark.jars.ivy": "{spark_workdir / "ivy"}",'
            f' "spark.sql.warehouse.dir": "{spark_workdir / "warehouse"}"}}',
        ],
    )
    # This driver lives the whole session and runs most of the suite's Spark work, where C2's
    # code pays for its compiling: with C1 only, the modules on it were slower by 20-60 %
    # (docs/testing.md), while the short-lived jobs gained.
    ours = os.environ.get("SPARK_SUBMIT_OPTS") == SHORT_LIVED_SPARK
    if ours:
        del os.environ["SPARK_SUBMIT_OPTS"]
    try:
        session = build_session(cfg)
    finally:
        if ours:
            os.environ["SPARK_SUBMIT_OPTS"] = SHORT_LIVED_SPARK
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real S3-compatible server (S3Proxy) on loopback for this test session, its objects in
    a temporary folder of its own; yields a :class:`tests.s3.server.S3Server`."""
    from tests.s3 import server

    try:
        running = server.start(tmp_path_factory.mktemp("s3proxy"))
    except RuntimeError as exc:
        pytest.fail(f"the test S3 server did not start: {exc}")
    yield running
    running.stop()
