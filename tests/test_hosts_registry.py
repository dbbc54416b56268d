"""One registry of hosts; every host module provides the declared Host interface."""

from __future__ import annotations

import inspect

import pytest

from memwiki.config import load
from memwiki.hosts.mining.base import HOSTS, REGISTRY, Host, TranscriptSource, host_api
from memwiki.hosts.mining.collect import self_session_vars


@pytest.mark.parametrize("host", HOSTS)
def test_every_host_module_is_a_host(host, tmp_path):
    api = host_api(host)
    for name in ("HOST", "SELF_SESSION_VAR", "SOURCE", "instruction_file", "host_present"):
        assert hasattr(api, name), (host, name)
    assert host == api.HOST
    assert issubclass(api.SOURCE, TranscriptSource) and api.SOURCE.host == host
    cfg = load(options={"wiki": str(tmp_path / "w")}, environ={"HOME": str(tmp_path)})
    assert api.host_present(cfg) is False  # an empty HOME has no trace of any agent
    assert api.SOURCE(cfg).list_sessions() == []  # nor sessions (the shared root_dir check)
    # The protocol's members are the module's (names and arity), so the cast is honest.
    for name in ("instruction_file", "host_present"):
        want = len(inspect.signature(getattr(Host, name)).parameters) - 1  # minus self
        assert len(inspect.signature(getattr(api, name)).parameters) == want


def test_self_session_variables_come_from_the_registry():
    variables = self_session_vars()
    assert {
        h: host_api(h).SELF_SESSION_VAR for h in REGISTRY if host_api(h).SELF_SESSION_VAR
    } == variables
    assert variables["claude-code"] == "CLAUDE_CODE_SESSION_ID"
    assert "openclaw" not in variables  # its wrapper names the run's session
