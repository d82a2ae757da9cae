"""The release the install tests share: the tree's sdist and wheel, built once per test run
(:func:`tests.support.release.shared_release`), even when pytest-xdist's workers run the
tests that use it."""

from __future__ import annotations

import os

import pytest

from tests.support.release import Release, shared_release


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "master")
    if worker == "master":
        return shared_release(tmp_path_factory.mktemp("release"), worker)
    # The run's folder, which holds each worker's own (popen-gw0, popen-gw1, ...).
    return shared_release(tmp_path_factory.getbasetemp().parent, worker)
