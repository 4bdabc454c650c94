"""The groups of ``--dist loadgroup`` (scripts/test.sh), and the order they are handed out in.

A module's tests run on one worker, so its module fixtures are made once, and every test on the
session's RabbitMQ node on one worker, so one node is started (it takes seconds of CPU), not
one a worker.

pytest-xdist 3.8 passes a test's ``xdist_group`` mark to its scheduler by appending ``@group``
to the test's id, which pytest 9.2 no longer reads (its ids are structured: pytest-xdist issue
1386), so every test was scheduled on its own. Here the groups travel beside the ids instead:
each worker writes the groups of the tests it collected to a file the controller named, and the
controller's scheduler groups by that file.

xdist hands the groups out by their number of tests, most first, which leaves the long
end-to-end modules of one or two tests (a fuzzer, a Prometheus, a restore drill) to the end,
where one of them outlasts the other workers by a minute. Here the group expected to take
longest goes first (longest processing time first): the seconds each whole group took in this
checkout's last run (pytest's cache), else in the run recorded in ``group-seconds.json`` beside
this file (a fresh clone, CI), else a second a test. The figures only order the groups; stale
ones cost balance, never a result. To record this machine's figures for a fresh clone, after a
full ``make test``: ``cp .pytest_cache/v/ep/group-seconds tests/support/group-seconds.json``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

_KEY = "ep_test_groups"
_CACHE_KEY = "ep/group-seconds"
RECORDED = Path(__file__).with_name("group-seconds.json")
UNKNOWN_TEST_SECONDS = 1.0


# Modules that start RabbitMQ nodes of their own: with the session's node's tests, one at a
# time on one worker. Started together with it, four Erlang VMs booted at once on 2 cores,
# and the three-node cluster's homebase once got no publish acknowledged in 120 s.
OWN_RABBITMQ_NODES = ("tests/integration/devices/test_rabbitmq_cluster.py",)


def group_of(item: pytest.Item) -> str:
    names = getattr(item, "fixturenames", ())
    on_rabbitmq = (
        "rabbitmq" in names
        or "rabbit_platform" in names
        or "[rabbitmq" in item.name
        or item.nodeid.split("::")[0] in OWN_RABBITMQ_NODES
    )
    return "rabbitmq" if on_rabbitmq else item.nodeid.split("::")[0]


class Groups:
    """The plugin tests/conftest.py registers when pytest-xdist is there."""

    def __init__(self) -> None:
        self.directory: Path | None = None
        self._groups: dict[str, str] | None = None
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.finished: Counter[str] = Counter()

    def groups(self) -> dict[str, str]:
        """On the controller, once the workers have collected: each test's group."""
        if self._groups is None:
            found = sorted(self.directory.glob("*.json")) if self.directory else []
            self._groups = json.loads(found[0].read_text()) if found else {}
        return self._groups

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """On a worker: the group of each collected test, for the controller's scheduler."""
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        if not workerinput or _KEY not in workerinput:
            return
        path = Path(workerinput[_KEY]) / f"{workerinput['workerid']}.json"
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps({item.nodeid: group_of(item) for item in items}))
        partial.replace(path)

    def pytest_configure_node(self, node: WorkerController) -> None:
        """On the controller: where the node writes its tests' groups."""
        if node.config.getvalue("dist") != "loadgroup":
            return
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="ep-test-groups-"))
        node.workerinput[_KEY] = str(self.directory)

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None
        return GroupScheduling(config, log, self.groups, self.expected(config))

    def expected(self, config: pytest.Config) -> dict[str, float]:
        recorded: dict[str, float] = {}
        if RECORDED.exists():
            recorded = json.loads(RECORDED.read_text())
        # No cache with -p no:cacheprovider: the recorded seconds alone.
        cache = getattr(config, "cache", None)
        cached: dict[str, float] = cache.get(_CACHE_KEY, {}) if cache else {}
        return {**recorded, **cached}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: the seconds each group takes, setup and teardown included."""
        if self._groups is None and self.directory is None:
            return
        group = self.groups().get(report.nodeid)
        if group is not None:
            self.seconds[group] += report.duration
            if report.when == "teardown":
                self.finished[group] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """On the controller: the seconds of each group all of whose tests ran, kept in
        pytest's cache for the next run's order."""
        cache = getattr(session.config, "cache", None)
        if not self.finished or cache is None:
            return
        sizes = Counter(self.groups().values())
        whole = {g: round(s, 1) for g, s in self.seconds.items() if self.finished[g] == sizes[g]}
        cache.set(_CACHE_KEY, {**cache.get(_CACHE_KEY, {}), **whole})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


class GroupScheduling(LoadGroupScheduling):
    """``loadgroup`` with the groups the workers wrote (a test missing from them keeps xdist's
    own rule: its ``@group`` suffix, where xdist could add one, else the test alone), handed
    out longest expected first. Its methods run once every worker has collected, so each has
    written its file by then."""

    def __init__(
        self, config: pytest.Config, log: Any, groups: Any, expected: dict[str, float]
    ) -> None:
        super().__init__(config, log)
        self._groups = groups
        self._expected = expected
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        group: str | None = self._groups().get(nodeid)
        return group or super()._split_scope(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:
            self._ordered = True
            units = sorted(
                self.workqueue.items(),
                key=lambda unit: -self._expected.get(unit[0], UNKNOWN_TEST_SECONDS * len(unit[1])),
            )
            self.workqueue.clear()
            self.workqueue.update(units)
        super()._assign_work_unit(node)
