"""memwiki.urls.redact: no credential of a URL survives into what memwiki prints."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memwiki.urls import redact

SECRET = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.~", min_size=8)


@given(SECRET, SECRET, st.sampled_from(["https", "http", "HTTPS"]), st.text(max_size=20))
def test_an_http_user_and_password_never_survive(user, password, scheme, around):
    around = around.replace("@", "")
    text = f"{around} {scheme}://{user}:{password}@git.example.com/w.git {around}"
    out = redact(text)
    assert user not in out.replace(around, "") and password not in out.replace(around, "")
    assert "git.example.com/w.git" in out


@given(SECRET, SECRET)
def test_an_ssh_password_goes_and_its_user_stays(user, password):
    out = redact(f"ssh://{user}:{password}@host:22/w.git")
    assert out == f"ssh://{user}:***@host:22/w.git"


def test_what_holds_no_credential_is_unchanged():
    for text in ("ssh://git@host/w.git", "git@github.com:me/w.git", "https://host/a@b", "x"):
        assert redact(text) == text
