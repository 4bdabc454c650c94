"""The groups of ``--dist loadgroup`` (scripts/test.sh): a module's tests on one worker, so its
module fixtures are made once, and every test on the session's RabbitMQ node on one worker, so
one node is started (it takes seconds of CPU), not one a worker.

pytest-xdist 3.8 passes a test's ``xdist_group`` mark to its scheduler by appending ``@group``
to the test's id, which pytest 9.2 no longer reads (its ids are structured: pytest-xdist issue
1386), so every test was scheduled on its own. Here the groups travel beside the ids instead:
each worker writes the groups of the tests it collected to a file the controller named, and the
controller's scheduler groups by that file.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

_KEY = "ep_test_groups"
_DIR = pytest.StashKey[Path]()


def group_of(item: pytest.Item) -> str:
    names = getattr(item, "fixturenames", ())
    on_rabbitmq = "rabbitmq" in names or "rabbit_platform" in names or "[rabbitmq" in item.name
    return "rabbitmq" if on_rabbitmq else item.nodeid.split("::")[0]


class Groups:
    """The plugin tests/conftest.py registers when pytest-xdist is there."""

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
        config = node.config
        if config.getvalue("dist") != "loadgroup":
            return
        if _DIR not in config.stash:
            config.stash[_DIR] = Path(tempfile.mkdtemp(prefix="ep-test-groups-"))
        node.workerinput[_KEY] = str(config.stash[_DIR])

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return GroupScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if _DIR in config.stash:
            shutil.rmtree(config.stash[_DIR], ignore_errors=True)


class GroupScheduling(LoadGroupScheduling):
    """``loadgroup`` with the groups the workers wrote; a test missing from them keeps
    xdist's own rule (its ``@group`` suffix, where xdist could add one, else the test alone).
    Called once every worker has collected, so each has written its file by then."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            self._groups = {}
            if _DIR in self.config.stash:
                for path in sorted(self.config.stash[_DIR].glob("*.json")):
                    self._groups = json.loads(path.read_text())
                    break
        return self._groups.get(nodeid) or super()._split_scope(nodeid)
