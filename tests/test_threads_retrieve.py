"""memwiki as a library in a multi-threaded or asyncio program (an MCP server answering
several agents): retrieves from many threads at once, on one Wiki and on several Wikis of
the same wiki, beside writers. Real threads, real files and git; the test embedder."""

from __future__ import annotations

import asyncio
import random
import threading
import time

from memwiki import RecallFile, Wiki, load_config

WORDS = (
    "billing deploy argo release kafka postgres redis cache auth token login queue "
    "worker cron backup restore metrics grafana alert pager"
).split()
QUERIES = ("kafka queue worker", "grafana alert", "restore backup", "auth token login")
MODES = ("bm25", "vector", "hybrid")


def quiet(message: str) -> None:
    """Progress lines go nowhere."""


def _wiki(tmp_path, notes: int = 80) -> Wiki:
    wiki, _ = Wiki.init(tmp_path / "wiki", config=load_config({"embed": "hash"}))
    rnd = random.Random(1)
    wiki.commit_results(
        [
            {
                "track": "memory",
                "name": f"note-{i}",
                "description": " ".join(rnd.sample(WORDS, 3)),
                "content": "# T\n" + "\n## S\n".join(
                    " ".join(rnd.choice(WORDS) for _ in range(30)) for _ in range(2)
                ),
            }
            for i in range(notes)
        ]
    )  # fmt: skip
    return wiki


def _answer(result) -> list:
    return [
        (f.path, round(f.score, 6), [(s.heading, s.start_line) for s in f.sections])
        for f in result.results
    ]


def _ask(wiki: Wiki, query: str, mode: str, deadline: bool) -> list:
    limit = time.monotonic() + 30 if deadline else None
    return _answer(wiki.retrieve(query, mode=mode, notify=quiet, deadline=limit))


def test_threads_get_the_answers_sequential_calls_get(tmp_path) -> None:
    """8 threads at once, one Wiki shared and one Wiki each, every mode, with and without
    a deadline: each answer is the one the same call gives alone."""
    wiki = _wiki(tmp_path)
    calls = [(q, m, d) for q in QUERIES for m in MODES for d in (False, True)]
    expected = {call: _ask(wiki, *call) for call in calls}
    own = [Wiki.open(wiki.root, wiki.config) for _ in range(4)]
    wrong: list = []
    errors: list[str] = []

    def work(n: int) -> None:
        rnd = random.Random(n)
        target = wiki if n % 2 else own[n // 2]
        for _ in range(20):
            call = rnd.choice(calls)
            try:
                got = _ask(target, *call)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if got != expected[call]:
                wrong.append((call, got))

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == [] and wrong == []


def test_many_asyncio_to_thread_retrieves_at_once(tmp_path) -> None:
    """48 retrieves gathered through asyncio.to_thread on a cold process's wikis."""
    wiki = _wiki(tmp_path, notes=30)
    expected = {m: wiki.retrieve("kafka queue worker", mode=m, notify=quiet).paths() for m in MODES}
    wikis = [Wiki.open(wiki.root, wiki.config) for _ in range(3)] + [wiki]

    async def everything() -> list:
        return await asyncio.wait_for(
            asyncio.gather(
                *[
                    asyncio.to_thread(
                        wikis[n % 4].retrieve, "kafka queue worker", mode=MODES[n % 3],
                        notify=quiet,
                    )
                    for n in range(48)
                ]
            ),
            timeout=120,
        )  # fmt: skip

    results = asyncio.run(everything())
    assert [r.paths() for r in results] == [expected[MODES[n % 3]] for n in range(48)]


def test_readers_see_each_write_whole_and_no_write_is_lost(tmp_path) -> None:
    """Writers in two threads (save, put + commit, commit_results, a hand edit + commit)
    while six threads retrieve: every answer names only files that exist, and at the end
    every write is committed and found."""
    wiki = _wiki(tmp_path, notes=30)
    stop = threading.Event()
    errors: list[str] = []

    def reader(n: int) -> None:
        rnd = random.Random(n)
        target = wiki if n % 2 else Wiki.open(wiki.root, wiki.config)
        for _ in range(500):
            if stop.is_set():
                return
            try:
                result = target.retrieve(
                    rnd.choice(QUERIES + ("zebra",)), mode=rnd.choice(MODES), notify=quiet
                )
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            errors.extend(p for p in result.paths() if not (wiki.root / p).is_file())

    def writer(tag: str, target: Wiki) -> None:
        for j in range(8):
            name = f"{tag}-{j}"
            try:
                if j % 4 == 0:
                    target.save(RecallFile("memory", name, "saved", body="# Z\nzebra saved\n"))
                elif j % 4 == 1:
                    target.put(RecallFile("memory", name, "put", body="# Z\nzebra put\n"))
                    target.commit()
                elif j % 4 == 2:
                    target.commit_results(
                        [{"track": "memory", "name": name, "description": "batch",
                          "content": "# Z\nzebra batch\n"}]
                    )  # fmt: skip
                else:
                    (wiki.root / "memory" / f"{name}.md").write_text(
                        f"---\nname: {name}\ndescription: hand\n---\n# Z\nzebra hand\n"
                    )
                    target.commit()
            except Exception as exc:
                errors.append(f"writer {type(exc).__name__}: {exc}")

    readers = [threading.Thread(target=reader, args=(n,), daemon=True) for n in range(6)]
    writers = [
        threading.Thread(target=writer, args=("a", wiki), daemon=True),
        threading.Thread(target=writer, args=("b", Wiki.open(wiki.root, wiki.config)), daemon=True),
    ]  # fmt: skip
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join(120)
    stop.set()
    for thread in readers:
        thread.join(120)
    assert not any(thread.is_alive() for thread in readers + writers)
    assert errors == []
    written = {f"memory/{tag}-{j}.md" for tag in "ab" for j in range(8)}
    assert set(wiki.retrieve("zebra", mode="bm25", k=50, notify=quiet).paths()) == written
    committed = {c.path for entry in wiki.log(limit=100) for c in entry.changes}
    assert written <= committed
    assert wiki.commit().commit is None  # nothing left behind uncommitted


def test_vector_mode_scores_the_same_with_and_without_a_deadline(tmp_path) -> None:
    """Bug: a vector-mode retrieve with a deadline (the progressive path, which runs BM25
    too in case the vectors are late) weighted the cosines by BM25's coverage of the
    query: the same files in the same order, but scores of 0.3 where the same call
    without a deadline gave 1.5, so a caller comparing or thresholding scores saw them
    change with the deadline. Found comparing threaded answers with sequential ones."""
    wiki = _wiki(tmp_path, notes=20)
    for query in QUERIES:
        plain = _ask(wiki, query, "vector", deadline=False)
        progressive = _ask(wiki, query, "vector", deadline=True)
        assert plain and progressive == plain
