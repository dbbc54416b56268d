"""The end-to-end suite runs only through `make e2e` (MEMWIKI_E2E=1): it installs real clients."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ENABLED = bool(os.environ.get("MEMWIKI_E2E"))
if not ENABLED:
    collect_ignore_glob = ["test_*.py"]

REPORT = Path(os.environ.get("MEMWIKI_E2E_REPORT", "/tmp/memwiki-e2e-report.txt"))


@pytest.fixture(scope="session", autouse=True)
def _report():
    REPORT.write_text("")
    yield


def note(line: str) -> None:
    """Add a line (an install time, a version) to the e2e report."""
    with REPORT.open("a") as fh:
        fh.write(line.rstrip("\n") + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        status = "PASS" if rep.passed else ("SKIP" if rep.skipped else "FAIL")
        with REPORT.open("a") as fh:
            fh.write(f"{status:4} {rep.duration:6.1f}s {item.nodeid}\n")


def pytest_sessionfinish(session, exitstatus):
    if not ENABLED:  # this conftest is loaded by every pytest run of the repository
        return
    with REPORT.open("a") as fh:
        fh.write(f"finished {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
