"""Commands over the wiki's files and history: init, config, put, add, list, show, rm, commit, log, lint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from .context import adopt_new_wiki, config, open_wiki, split_ref, state
from .options import JSON
from .output import emit_json, print_commit, print_hooks_setup, warn


def init(
    path: Path = typer.Argument(
        None, help="Where to create the wiki (default: the configured wiki)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Allow a wiki inside another git repository."
    ),
    hooks: bool = typer.Option(
        False, "--hooks", help="Also turn on the pre-commit hooks (runs `pre-commit install`)."
    ),
    remote: str = typer.Option(
        None, "--remote", help="Also set the remote `memwiki sync` uses (no network access)."
    ),
    as_json: bool = JSON,
) -> None:
    """Create a wiki: a git repository with memory/ and skill/ tracks."""
    from ..wiki import Wiki

    if remote is not None:
        from ..git.sync import normalize_url

        normalize_url(remote)  # a bad URL is refused before anything is created
    target = path or (Path(state.wiki) if state.wiki else config().wiki_path)
    wiki, created = Wiki.init(target, force=force)
    remote_set = None
    if remote is not None:
        from ..git.sync import add_remote

        remote_set = add_remote(wiki, remote)
    config_file, hint = adopt_new_wiki(wiki.root) if path is not None else (None, None)
    setup = None
    if hooks:
        from ..git.precommit import run_install

        setup = run_install(wiki)
    if as_json:
        data = {"path": str(wiki.root), "created": created}
        if config_file is not None:
            data["config_file"] = str(config_file)
        if hint is not None:
            data["hint"] = hint
        if setup is not None:
            data["hooks"] = setup.to_dict()
        if remote_set is not None:
            data["remote"] = remote_set
        emit_json(data)
    elif created:
        print(f"Initialised a memwiki wiki in {wiki.root}")
    else:
        print(f"{wiki.root} is already a memwiki wiki; nothing changed")
    if not as_json and config_file is not None:
        print(f"It is now the configured wiki ({config_file})")
    elif not as_json and hint is not None:
        print(f"Note: {hint}")
    if remote_set is not None and not as_json:
        print(f"remote {remote_set['name']}  {remote_set['url']}  (`memwiki sync` pushes the wiki)")
    if setup is not None:
        print_hooks_setup(setup, as_json)


def config_show(as_json: bool = JSON) -> None:
    """Print each setting, its value and where the value came from."""
    cfg = config()
    values = {k: s.value for k, s in cfg.settings.items()}
    # The wiki every other command opens (Wiki resolves it), not the text it was given:
    # a relative --wiki or MEMWIKI_DIR was shown as written, "./memwiki", which says
    # nothing once read from another directory.
    values["wiki"] = str(cfg.wiki_path.resolve())
    # An agent that runs this puts its output into a transcript: no secret is printed
    # (it printed MEMWIKI_GIT_TOKEN whole, and a projects URL's user:token@).
    from ..urls import redact

    for key, value in values.items():
        if value is not None and key == "git_token":
            values[key] = f"*** ({len(str(value))} characters)"
        elif isinstance(value, str):
            values[key] = redact(value)
    if as_json:
        emit_json(
            {
                "config_file": str(cfg.config_file),
                "settings": {
                    k: {"value": values[k], "source": s.source} for k, s in cfg.settings.items()
                },
            }
        )
        return
    print(f"# config file: {cfg.config_file}")
    width = max(len(k) for k in cfg.settings)
    for key, s in cfg.settings.items():
        print(f"{key:<{width}}  {values[key] if values[key] is not None else '-'}  ({s.source})")


def _read_payload(source: str) -> dict:
    from ..errors import InvalidInput

    where = "stdin" if source == "-" else source
    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{where}: cannot read: {exc.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict) or set(data) - {"recall_files", "message"}:
        raise InvalidInput(
            f'{where}: expected {{"recall_files": [...]}} (and optionally "message")'
        )
    return data


def put(
    file: str = typer.Argument(..., help='JSON payload {"recall_files": [...]}, or - for stdin.'),
    as_json: bool = JSON,
) -> None:
    """Write RecallFiles from a JSON payload and commit them (all or nothing)."""
    payload = _read_payload(file)
    wiki = open_wiki()
    items = payload.get("recall_files")
    tracks = (
        [i.get("track") for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    )
    new = _missing_tracks(wiki.root, tracks)
    result = wiki.commit_results(items, payload.get("message"))
    print_commit(result, as_json)
    _note_new_tracks(wiki.root, new)


def _missing_tracks(root: Path, tracks: list) -> list[str]:
    """The tracks named here that have no folder yet (a misspelt one would be made)."""
    return sorted({t for t in tracks if isinstance(t, str) and t and not (root / t).is_dir()})


def _note_new_tracks(root: Path, tracks: list[str]) -> None:
    # Any top-level folder is a track, so `add memroy x` is valid and made a folder without
    # a word; a stderr line lets a person (or an agent) see a misspelt track at once.
    for track in tracks:
        if (root / track).is_dir():  # made by this command (a refused one made nothing)
            others = sorted(
                p.name for p in root.iterdir()
                if p.is_dir() and not p.name.startswith(".") and p.name != track
            )  # fmt: skip
            had = f" (the wiki had {', '.join(others)})" if others else ""
            warn(f"note: new track {track}/{had}")


def add(
    track: str = typer.Argument(..., help="memory, skill, or another track."),
    name: str = typer.Argument(..., help="kebab-case name, the file stem."),
    description: str = typer.Option(..., "--description", "-d", help="One line."),
    body_file: Path = typer.Option(
        None, "--body-file", help="Read the body from this file (default: stdin if piped)."
    ),
    tags: list[str] = typer.Option(None, "--tag", "-t", metavar="TAG", help="A tag (repeatable)."),
    as_json: bool = JSON,
) -> None:
    """Create or update one RecallFile and commit it (keeps the body if none is given)."""
    from ..errors import InvalidInput, NotFound
    from ..recallfile import RecallFile

    wiki = open_wiki()
    body = None
    if body_file is not None:
        try:
            body = body_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InvalidInput(f"--body-file {body_file}: no such file") from None
        except OSError as exc:
            raise InvalidInput(f"--body-file {body_file}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InvalidInput(f"--body-file {body_file}: not UTF-8 text") from None
    elif not sys.stdin.isatty():
        # Bytes, read as UTF-8 like every note: in the locale's encoding, a Latin-1
        # locale turned a piped "Café" into "CafÃ©" and committed it.
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("stdin: not UTF-8 text") from None
        body = text.replace("\r\n", "\n").replace("\r", "\n") or None
    try:
        rf = wiki.get(track, name)
        rf.description = description
        if body is not None:
            rf.body = body
        if tags:
            rf.tags = list(tags)
    except NotFound:
        rf = RecallFile(
            track,
            name,
            description,
            body=body or f"# {name.replace('-', ' ').capitalize()}\n",
            tags=list(tags or []),
        )
    new = _missing_tracks(wiki.root, [track])
    print_commit(wiki.save(rf), as_json)
    _note_new_tracks(wiki.root, new)


PAGE = 100_000  # files per list_recall_files call when `memwiki list` shows them all


SKIPPED_SHOWN = 20  # `list`'s lines on files it skips; `lint` names every one


def list_(
    track: str = typer.Option(None, "--track", help="Only this track."),
    limit: int = typer.Option(None, "--limit", "-n", help="One page of at most N files."),
    cursor: str = typer.Option(None, "--cursor", help="next_cursor of the previous page."),
    as_json: bool = JSON,
) -> None:
    """List RecallFiles (all of them unless --limit)."""
    wiki = open_wiki()
    items, skipped = [], []
    # `limit or PAGE` would turn --limit 0 into "everything"; let the library refuse it.
    # Pages are large: each one walks the wiki again, so 10,000 files are one walk.
    page = wiki.list_recall_files(
        track=track, cursor=cursor, limit=PAGE if limit is None else limit
    )
    items.extend(page.items)
    skipped.extend(page.skipped)
    while limit is None and page.next_cursor:
        page = wiki.list_recall_files(track=track, cursor=page.next_cursor, limit=PAGE)
        items.extend(page.items)
        skipped.extend(p for p in page.skipped if p not in skipped)
    # A vault of notes made without memwiki can hold hundreds (the vault audit's: ~900 lines
    # on every `list`); lint names every one, --json lists them all.
    for problem in skipped[:SKIPPED_SHOWN]:
        warn(f"skipped {problem}")
    if len(skipped) > SKIPPED_SHOWN:
        more = len(skipped) - SKIPPED_SHOWN
        warn(f"skipped {more} more file{'s' * (more != 1)} (`memwiki lint` names every one)")
    if as_json:
        emit_json(
            {
                "items": [e.to_dict() for e in items],
                "next_cursor": page.next_cursor if limit else None,
                # Malformed files are skipped, never silently: agents see them here too.
                "skipped": [p.to_dict() for p in skipped],
            }
        )
        return
    rows: list[tuple[str, ...]] = [("track", "name", "description", "updated")]
    rows += [(e.track, e.name, e.description, e.updated or "") for e in items]
    if not sys.stdout.isatty() and _print_plain(rows, width=200):
        if limit and page.next_cursor:
            print(f"(more: --cursor {page.next_cursor})")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..recallfile import printable

    table = Table("track", "name", "description", "updated", box=None, pad_edge=False)
    for row in rows[1:]:
        # A description is text, never rich markup: `[/]` in one made `list` fail (exit 70),
        # `[bold]` restyled it, and an escape sequence reached the terminal. Text, not
        # markup.escape: escape doubled a trailing backslash (`C:\` printed as `C:\\`).
        table.add_row(*(Text(printable(cell)) for cell in row))
    # emoji=False: a description's `:rocket:` is text, as the plain path prints it
    console = Console(width=200 if not sys.stdout.isatty() else None, emoji=False)
    with console.capture() as captured:
        console.print(table)
    # Rich pads the last column to its width; trailing blanks are noise for grep and agents.
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    if limit and page.next_cursor:
        print(f"(more: --cursor {page.next_cursor})")


def _print_plain(rows: list[tuple[str, ...]], width: int) -> bool:
    """Rich's borderless table, without rich: 10,000 rows in milliseconds instead of seconds.

    Only when nothing would wrap and every cell is printable; False otherwise.
    Widths are terminal cells as rich counts them (a CJK character takes two): a vault's
    accented or CJK names once sent every `list` to rich, 1.8 s at 5,000 notes.
    """
    if any(not c.isprintable() for r in rows for c in r):
        return False
    if all(c.isascii() for r in rows for c in r):
        cells = [[len(c) for c in r] for r in rows]  # rich is not imported at all
    else:
        from rich.cells import cell_len  # rich's own measure (a CJK character is two cells)

        cells = [[cell_len(c) for c in r] for r in rows]
    widths = [max(r[i] for r in cells) for i in range(len(rows[0]))]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return False
    sys.stdout.write(
        "".join("  ".join(c + " " * (w - n) for c, n, w in zip(r, ns, widths, strict=True))
                .rstrip() + "\n" for r, ns in zip(rows, cells, strict=True))
    )  # fmt: skip
    return True


def show(ref: str = typer.Argument(..., help="TRACK/NAME"), as_json: bool = JSON) -> None:
    """Print one RecallFile."""
    wiki = open_wiki()
    track, name = split_ref(ref, wiki)
    rf = wiki.get(track, name)
    if as_json:
        emit_json(rf.to_dict())
    else:
        sys.stdout.write(wiki.path_of(track, name).read_text(encoding="utf-8"))


def rm(
    ref: str = typer.Argument(..., help="TRACK/NAME"),
    force: bool = typer.Option(
        False, "--force", help="Delete it even with changes that are not committed (lost for good)."
    ),
    as_json: bool = JSON,
) -> None:
    """Delete one RecallFile and commit."""
    wiki = open_wiki()
    print_commit(wiki.remove(*split_ref(ref, wiki), force=force), as_json)


def commit(
    message: str = typer.Option(
        None, "--message", "-m", help="Commit message (default: names the files)."
    ),
    as_json: bool = JSON,
) -> None:
    """Commit everything that changed in the wiki, hand edits included."""
    from ..git.staged import rejected, said

    wiki = open_wiki()
    result = wiki.commit(message)
    print_commit(result, as_json)
    for held in result.not_committed:  # never committed (git/repo.commit_all): said why
        warn(f"not committed {held['path']}: {held['problem']}")
    # commit does not validate (a person's own edits, staged or not); it says what lint rejects
    for entry in rejected(wiki.repo, result.commit, result.created + result.updated):
        warn(said(entry))


def log(
    ref: str = typer.Argument(None, help="TRACK/NAME: only commits touching it."),
    n: int = typer.Option(20, "-n", help="At most N commits."),
    as_json: bool = JSON,
) -> None:
    """Show the history of the wiki or of one RecallFile."""
    from ..errors import InvalidInput, NotFound

    if n < 1:
        raise InvalidInput("log: -n must be at least 1")
    wiki = open_wiki()
    track, name = split_ref(ref, wiki) if ref is not None else (None, None)  # '' is a bad ref
    entries = wiki.log(track, name, limit=n)
    if name is not None and not entries and not wiki.path_of(track, name).is_file():
        # as show and rm say it (a deleted note still has its history, so it is listed)
        raise NotFound(f"no RecallFile {track}/{name}, now or in the history")
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    for e in entries:
        subject = e.message.splitlines()[0] if e.message else ""
        print(f"{e.commit[:12]}  {e.time}  {e.author}  {subject}")


def lint(
    files: list[str] = typer.Argument(
        None, help="Only these files or folders (paths relative to the wiki or absolute)."
    ),
    as_json: bool = JSON,
) -> None:
    """Report every invalid RecallFile as path:line: message (exit 1 if any)."""
    from ..lint import lint_wiki, select

    wiki = open_wiki()
    problems = lint_wiki(wiki, select(wiki, files, Path.cwd()) if files else None)
    if as_json:
        emit_json({"ok": not problems, "problems": [p.to_dict() for p in problems]})
    else:
        for problem in problems:
            print(problem)
    if problems:
        raise typer.Exit(1)
