"""Guides, task prompt and wrapper templates: present, rendered, and in sync with docs/hosts.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.errors import InvalidInput
from memwiki.hosts.integrate.schedule import HEADLESS, headless_command, render_wrapper
from memwiki.hosts.integrate.texts import install_guide, render, task_prompt
from memwiki.hosts.mining.base import HOSTS

DOCS = Path(__file__).parent.parent / "docs" / "hosts.md"


@pytest.mark.parametrize("host", HOSTS)
def test_guide_is_the_docs_section(host):
    guide = install_guide(host)
    assert guide.startswith("## ")
    assert guide in DOCS.read_text()
    for heading in (
        "**Install**",
        "**What gets mined**",
        "**Where from**",
        "**Check**",
        "**Remove**",
    ):
        assert heading in guide
    assert f"memwiki install --host {host}" in guide
    assert f"memwiki uninstall --host {host}" in guide
    assert "memwiki hosts detect" in guide
    if host in HEADLESS:
        assert f"memwiki schedule --host {host} --install" in guide
        assert f"memwiki bridge prepare --host {host}" in guide


def test_docs_name_the_commands():
    text = DOCS.read_text()
    for cmd in (
        "memwiki hosts detect",
        "memwiki bridge prepare --host",
        "memwiki bridge commit --host",
        "memwiki hook claude-code",
        "memwiki docs install --host",
    ):
        assert cmd in text


def test_unknown_host_is_refused():
    with pytest.raises(InvalidInput):
        install_guide("emacs")
    with pytest.raises(InvalidInput):
        task_prompt("emacs")


@pytest.mark.parametrize("host", HOSTS)
def test_task_prompt_renders(host):
    text = task_prompt(host)
    assert "{{" not in text
    assert f"memwiki bridge prepare --host {host} --json" in text
    assert f"memwiki bridge commit --host {host} --json" in text


@pytest.mark.parametrize("host", sorted(HEADLESS))
def test_wrapper_renders(tmp_path, host):
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(tmp_path)})
    text = render_wrapper(host, cfg)
    assert "{{" not in text and "MEMWIKI_BRIDGING_RUN=1" in text
    assert headless_command(host, cfg) in text


def test_render_refuses_a_missing_value():
    with pytest.raises(InvalidInput):
        render("{{NOPE}}")
