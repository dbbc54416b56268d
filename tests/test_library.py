"""memwiki used as a library inside one long-lived process: an agent loop or a server
that keeps one `Wiki` for days, calls it from several threads, while other processes
edit the wiki. The real model, real threads, real files."""

from __future__ import annotations

import gc

from memwiki import Wiki
from memwiki.embed.onnx import OnnxEmbedder


def _put(wiki: Wiki, name: str, description: str, body: str) -> None:
    wiki.commit_results(
        [{"track": "memory", "name": name, "description": description, "content": body}]
    )


def _live_models() -> list[OnnxEmbedder]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, OnnxEmbedder)]


def test_one_wiki_loads_the_model_once_for_all_its_retrieves(wiki):
    """Bug it prevents: every Wiki.retrieve loaded the ONNX model anew (a new Index each
    call): about 25 ms of set-up per answer in a long-lived process, and a session built
    and thrown away each time."""
    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nDeployed by Argo CD.\n")
    first = wiki.retrieve("how is billing deployed?", notify=lambda m: None)
    assert first.mode == "hybrid" and first.paths() == ["memory/billing-service.md"]
    models = _live_models()
    assert len(models) == 1  # kept by the wiki, not thrown away with the call's index
    for query in ("argo cd", "deployment of the billing service", "billing"):
        assert wiki.retrieve(query, notify=lambda m: None).mode == "hybrid"
    assert _live_models() == models  # the same session answered every later call


def test_arguments_of_the_wrong_type_are_invalid_input(wiki):
    """Bug it prevents: a library caller's retrieve(None), k="3", budget=None,
    deadline="soon", put("text") or list_recall_files(limit="5") raised AttributeError or
    TypeError from deep inside memwiki instead of the documented MemwikiError."""
    import pytest

    from memwiki.errors import InvalidInput

    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    bad_retrieves = [
        {"query": None},
        {"query": 123},
        {"query": "billing", "k": "3"},
        {"query": "billing", "k": 2.5},
        {"query": "billing", "k": True},
        {"query": "billing", "budget": None},
        {"query": "billing", "project": 5},
        {"query": "billing", "deadline": "soon"},
    ]
    for kwargs in bad_retrieves:
        query = kwargs.pop("query")
        with pytest.raises(InvalidInput) as caught:
            wiki.retrieve(query, mode="bm25", notify=lambda m: None, **kwargs)
        assert "\n" not in caught.value.message
    with pytest.raises(InvalidInput, match="expected a RecallFile"):
        wiki.put("# not a RecallFile")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="limit must be an integer"):
        wiki.list_recall_files(limit="5")  # type: ignore[arg-type]
    assert wiki.retrieve("billing", mode="bm25", k=1, budget=0).paths() == [
        "memory/billing-service.md"
    ]


def _python_block(doc: str, heading: str, after: str = "```python\n") -> str:
    """The first fenced block starting with `after` below a heading of a document."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / doc).read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") :]
    start = section.index(after) + len(after)
    return section[start : section.index("```", start)]


def test_the_documented_library_examples_run(tmp_path, isolated_env):
    """The README's Library example, the guide's From Python example and library.md's
    example, run as they are written in a fresh process against ~/memwiki; the printed
    output the guide and library.md show is checked."""
    import os
    import subprocess
    import sys

    home_wiki, _ = Wiki.init(isolated_env / "memwiki")
    _put(home_wiki, "billing-service", "Stack and deployment of the billing service",
         "# Billing service\nDeployed by Argo CD; released by tagging main.\n")  # fmt: skip
    _put(home_wiki, "billing-staging", "The billing staging cluster", "# Staging\nkind.\n")
    env = {**os.environ, "MEMWIKI_EMBED": "hash"}
    for doc, heading, expected in (
        ("README.md", "## Library", None),
        ("docs/guide.md", "## From Python", _python_block("docs/guide.md", "prints", "```\n")),
        ("docs/library.md", "## Example", _python_block("docs/library.md", "prints", "```\n")),
    ):
        script = _python_block(doc, heading)
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{doc}: {done.stderr}"
        if expected is None:  # the README prints one line per hit: path, score, line ranges
            assert done.stdout.startswith("memory/billing-service.md ")
        else:
            assert done.stdout == expected


def _deleted_index_files(wiki: Wiki) -> list[str]:
    """Index files this process still has open or mapped although they were deleted."""
    import os

    sidecar = str(wiki.sidecar)
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the descriptor listdir itself used
            continue
    with open("/proc/self/maps", encoding="utf-8") as maps:
        mapped = [line.split(None, 5)[-1].strip() for line in maps]
    return sorted({f for f in fds + mapped if f.startswith(sidecar) and f.endswith("(deleted)")})


def test_a_long_lived_wiki_keeps_no_deleted_index_file_open(wiki, run_memwiki):
    """Bug it prevents: a closed Whoosh reader kept its segment mapped through memoryviews
    in reference cycles, so a server using the library held older generations' files
    open and mapped, deleted (their disk space with them), until a garbage collection
    happened to run. Edits answered inline and full rebuilds by another process alike."""
    import sys

    if not sys.platform.startswith("linux"):
        import pytest

        pytest.skip("reads /proc/self")
    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    wiki.retrieve("billing", mode="bm25", notify=lambda m: None)
    gc.collect()
    gc.disable()  # what the collector would free sooner or later must be freed at once
    try:
        for n in range(3):
            rf = wiki.get("memory", "billing-service")
            rf.body += f"\nRelease {n} went out through kafka.\n"
            wiki.put(rf)  # the next retrieve indexes it inline
            assert wiki.retrieve("kafka release", mode="bm25", notify=lambda m: None).paths()
            assert run_memwiki("--wiki", wiki.root, "reindex", "--full").returncode == 0
            assert wiki.retrieve("kafka", mode="bm25", notify=lambda m: None).paths()
        assert _deleted_index_files(wiki) == []
    finally:
        gc.enable()


def test_a_long_lived_wiki_caches_only_segments_its_index_still_has(wiki, run_memwiki):
    """Bug it prevents: the posting lists of every merged-away or rebuilt Whoosh segment
    stayed cached until a million postings were held (about 130 MB): a server using the
    library grew by every edit it answered, and by every rebuild of another process."""
    import os

    from memwiki.index import bm25_postings

    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    _put(wiki, "kafka-cluster", "The kafka cluster", "# Kafka\nThree brokers.\n")
    for n in range(8):
        rf = wiki.get("memory", "billing-service")
        rf.body += f"\nRelease {n} went out through kafka.\n"
        wiki.put(rf)  # the next retrieve indexes it inline: a new segment each time
        assert wiki.retrieve("kafka release", mode="bm25", notify=lambda m: None).paths()
        if n % 4 == 3:
            assert run_memwiki("--wiki", wiki.root, "reindex", "--full").returncode == 0
    assert wiki.retrieve("kafka", mode="bm25", notify=lambda m: None).paths()
    index = os.path.realpath(wiki.sidecar / "index")
    ours = {(f, s) for f, s in bm25_postings.cached_segments() if f.startswith(index)}
    assert ours and all(os.path.exists(os.path.join(f, s)) for f, s in ours)


def test_more_arguments_of_the_wrong_type_are_invalid_input(wiki, tmp_path):
    """Bug it prevents: Wiki.open(5) and Wiki.init(5) raised pathlib's TypeError, a dict
    as config an AttributeError later, log(limit="3") islice's ValueError, commit(message=5)
    libgit2's TypeError; a RecallFile with tags="release" was written as
    `tags: [r, e, l, e, a, s, e]` and one with body=5 as the text "5"."""
    import pytest

    from memwiki import InvalidInput, RecallFile

    for call in (
        lambda: Wiki.open(5),  # type: ignore[arg-type]
        lambda: Wiki.init(5),  # type: ignore[arg-type]
        lambda: Wiki.open(wiki.root, {"embed": "hash"}),  # type: ignore[arg-type]
        lambda: wiki.log(limit="3"),  # type: ignore[arg-type]
        lambda: wiki.log(limit=0),
        lambda: wiki.commit(message=5),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidInput) as caught:
            call()
        assert "\n" not in caught.value.message
    bad_files = [
        (RecallFile("memory", "a", "x", tags="release"), "tags must be a list of strings"),  # type: ignore[arg-type]
        (RecallFile("memory", "a", "x", sources=[1]), "sources must be a list of strings"),  # type: ignore[list-item]
        (RecallFile("memory", "a", "x", body=5), "body must be a string, not int"),  # type: ignore[arg-type]
        (RecallFile("memory", "a", "x", extra=["k"]), "extra must be a dict"),  # type: ignore[arg-type]
    ]
    for rf, message in bad_files:
        for write in (wiki.put, wiki.save):
            with pytest.raises(InvalidInput, match=message):
                write(rf)
    assert not (wiki.root / "memory" / "a.md").exists()  # nothing written
    good = RecallFile("memory", "a", "x", tags=("release",), body="# A\n")
    assert wiki.save(good).created == ["memory/a.md"]
    assert wiki.get("memory", "a").tags == ["release"]
    assert Wiki.open(str(tmp_path / "wiki")).root == wiki.root  # a str is a path too


def test_a_git_failure_reaches_the_library_as_storage_error(wiki):
    """Bug it prevents: only the command line turned libgit2's refusal (a damaged
    repository, a full disk while writing objects) into StorageError, exit code 5; a
    library caller got a bare pygit2.GitError, outside the documented MemwikiError."""
    import shutil

    import pytest

    from memwiki import MemwikiError, RecallFile, StorageError

    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    shutil.rmtree(wiki.root / ".git" / "objects")  # the object database is gone
    with pytest.raises(StorageError, match="^git failed: ") as caught:
        wiki.save(RecallFile("memory", "kafka", "The kafka cluster", body="# Kafka\n"))
    assert isinstance(caught.value, MemwikiError) and caught.value.exit_code == 5
    assert type(caught.value.__cause__).__name__ == "GitError"  # the cause is kept


def _children() -> list[tuple[int, str]]:
    """This process's child processes, with their state (Z: a zombie nobody reaped)."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == os.getpid():
            found.append((int(pid), fields[0]))
    return found


def _held_under(folder) -> list[str]:
    """Files under folder this process has open or mapped."""
    import os

    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    with open("/proc/self/maps", encoding="utf-8") as maps:
        names += [line.split(None, 5)[-1].strip() for line in maps]
    return sorted({n for n in names if n.startswith(str(folder))})


def test_a_closed_wiki_holds_no_repository_model_or_child(tmp_path, git):
    """A long-lived caller opens a wiki, retrieves, writes, lets an edit be indexed after
    the answer, and closes it (a with block): libgit2's mapped pack files, the loaded
    model and the finished index writer (a zombie until the next write) are all released.
    Bug it prevents: there was no close(): a process that opened wiki after wiki kept each
    one's pack files mapped (deleted ones too, after a `git gc`) and its model loaded until
    a garbage collection, and the last forked writer stayed a zombie."""
    import sys
    import time

    import pytest

    from memwiki import RecallFile

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    Wiki.init(tmp_path / "w")
    with Wiki.open(tmp_path / "w") as wiki:
        _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
        git(wiki.root, "gc", "-q")  # the objects in a pack libgit2 maps
        assert wiki.retrieve("billing", notify=lambda m: None).mode == "hybrid"
        assert len(_live_models()) == 1
        wiki.save(RecallFile("memory", "kafka", "The kafka cluster", body="# Kafka\nbrokers\n"))
        assert [e.message for e in wiki.log(limit=1)] == ["memwiki: save memory/kafka"]
        assert _held_under(wiki.root / ".git")  # the pack is mapped while the wiki is open
        result = wiki.retrieve("kafka brokers", notify=lambda m: None, defer=True)
        assert result.paths()[0] == "memory/kafka.md"
        assert result.write_later is not None and result.write_later() == "forked"
        for _ in range(1000):  # the writer commits the edit and ends; nobody reaps it yet
            if [state for _, state in _children()] == ["Z"]:
                break
            time.sleep(0.01)
        assert [state for _, state in _children()] == ["Z"]
        assert result.write_later() == "none"  # once: the update is not written twice
    assert _children() == []
    assert _held_under(wiki.root / ".git") == []
    assert _live_models() == []  # the result is kept: its write_later let the index go
    # closed is not broken: the next call opens what it needs again
    assert (
        wiki.retrieve("kafka", mode="bm25", notify=lambda m: None).paths()[0] == "memory/kafka.md"
    )
    assert wiki.get("memory", "kafka").description == "The kafka cluster"
    wiki.close()
    wiki.close()  # twice is harmless


def _wait_for_zombie(timeout: float = 60.0) -> list[tuple[int, str]]:
    """This process's children once they have all ended (each a zombie), or as they are."""
    import time

    until = time.monotonic() + timeout
    while time.monotonic() < until:
        children = _children()
        if children and all(state == "Z" for _, state in children):
            break
        time.sleep(0.05)
    return _children()


def test_a_long_lived_caller_collects_no_background_reindex_zombie(tmp_path):
    """Bug it prevents: the background reindex a retrieve starts was started without a
    handle kept, so in a long-lived process it stayed a zombie until Python's next
    subprocess launch. The next retrieve reaps it, and so does close()."""
    import sys

    import pytest

    from memwiki import load_config
    from memwiki.index import background

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    wiki, _ = Wiki.init(tmp_path / "w", config=load_config({"embed": "hash"}))
    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    assert background.start(wiki.root, wiki.sidecar)
    assert [state for _, state in _wait_for_zombie()] == ["Z"]  # ended, nobody reaped it
    assert wiki.retrieve("billing", notify=lambda m: None).paths() == ["memory/billing-service.md"]
    assert _children() == []  # the retrieve reaped it
    assert background.start(wiki.root, wiki.sidecar)
    assert [state for _, state in _wait_for_zombie()] == ["Z"]
    wiki.close()
    assert _children() == []
    assert "background reindex" in background.log_path(wiki.sidecar).read_text()  # it ran


def test_wikis_with_the_same_embedder_share_one_loaded_model(tmp_path):
    """Bug it prevents: each Wiki loaded its own copy of the model (about 100 MB), so two
    wikis open at once held two. One is shared by the wikis of the same embedder settings,
    from several threads at once, and goes with the last of them to close."""
    from concurrent.futures import ThreadPoolExecutor

    from memwiki import load_config

    wikis = [Wiki.init(tmp_path / name)[0] for name in ("a", "b")]
    for wiki in wikis:
        _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    serial = [w.retrieve("how is billing deployed?", notify=lambda m: None) for w in wikis]
    assert [r.mode for r in serial] == ["hybrid", "hybrid"]
    assert len(_live_models()) == 1
    with ThreadPoolExecutor(4) as pool:
        both = list(
            pool.map(lambda w: w.retrieve("how is billing deployed?", notify=lambda m: None),
                     wikis * 4)
        )  # fmt: skip
    answers = [(r.mode, [h.to_dict() for h in r.results]) for r in both]
    assert answers == [(r.mode, [h.to_dict() for h in r.results]) for r in serial] * 4
    hashed = Wiki.open(tmp_path / "a", config=load_config({"embed": "hash"}))
    assert hashed.retrieve("billing", notify=lambda m: None).index["embedder"]["provider"] == "hash"
    assert len(_live_models()) == 1  # other settings: their own embedder, not this one
    wikis[0].close()
    assert len(_live_models()) == 1  # the other wiki still uses it
    assert wikis[1].retrieve("billing", notify=lambda m: None).mode == "hybrid"
    wikis[1].close()
    assert _live_models() == []


def _tree(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_folder_that_is_no_wiki_is_refused_and_left_as_it_was(tmp_path):
    """Bug it prevents: Wiki.retrieve on a wiki whose folder was deleted after it was
    opened, or on Wiki(path) made over a plain folder, created .memwiki/ there and gave an
    empty answer; put wrote .memwiki/ and memory/ into it. Both are NotFound, as
    Wiki.open says it, and nothing is created."""
    import shutil

    import pytest

    from memwiki import NotFound, RecallFile, load_config

    config = load_config({"embed": "hash"})
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("# not a wiki\n")
    with pytest.raises(NotFound, match=f"^no wiki at {plain}: run `memwiki init"):
        Wiki(plain, config).retrieve("notes", notify=lambda m: None)
    with pytest.raises(NotFound, match="^no wiki at"):
        Wiki(plain, config).put(RecallFile("memory", "a", "x", body="# A\n"))
    assert _tree(plain) == ["notes.md"]
    wiki, _ = Wiki.init(tmp_path / "w", config=config)
    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    assert wiki.retrieve("billing", notify=lambda m: None).paths() == ["memory/billing-service.md"]
    shutil.rmtree(wiki.root)
    with pytest.raises(NotFound, match=f"^no wiki at {wiki.root}"):
        wiki.retrieve("billing", notify=lambda m: None)
    with pytest.raises(NotFound, match=f"^no wiki at {wiki.root}"):
        wiki.save(RecallFile("memory", "a", "x", body="# A\n"))
    assert not wiki.root.exists()


def test_retrieve_names_a_bad_k_or_budget_as_its_caller_passed_it(wiki, cli):
    """Bug it prevents: a library caller passing k=0 read "-k must be at least 1", about a
    command-line flag it never used; the command line still names its flags."""
    import pytest

    from memwiki import InvalidInput

    for kwargs, message in (
        ({"k": 0}, "k must be at least 1"),
        ({"budget": -1}, "budget must be 0 (no limit) or more"),
    ):
        with pytest.raises(InvalidInput) as caught:
            wiki.retrieve("billing", notify=lambda m: None, **kwargs)
        assert caught.value.message == message
    assert cli("--wiki", wiki.root, "retrieve", "x", "-k", "0")[1:] == (
        "",
        "memwiki: error: -k must be at least 1\n",
    )
    code, _, err = cli("--wiki", wiki.root, "retrieve", "x", "--budget", "-1")
    assert (code, err) == (2, "memwiki: error: --budget must be 0 (no limit) or more\n")
