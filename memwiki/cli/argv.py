"""argv without Typer: the one scanner of global options and `retrieve`'s defaults.

Both parsers read this module: the argparse parser of the hot `retrieve` path (cli/fast.py)
and the Typer application (cli/app.py). It imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

# Global options that may stand anywhere before `--` (agents write them after the command
# as often as before it).
WIKI_FLAGS = ("--wiki", "-w")
DEBUG_FLAG = "--debug"
JSON_FLAG = "--json"
HELP_FLAGS = ("-h", "--help")


@dataclass(frozen=True)
class RetrieveDefaults:
    """The defaults of `memwiki retrieve`'s options (Wiki.retrieve has the same)."""

    k: int = 5
    budget: int = 1500
    mode: str = "hybrid"
    project: str = "auto"


RETRIEVE = RetrieveDefaults()


@dataclass(frozen=True)
class Globals:
    """The global options of one invocation and the arguments left once they are taken out."""

    wiki: str | None
    debug: bool
    rest: list[str]
    # A --wiki/-w that ended the command line without its value (it is also in rest).
    dangling: str | None = None

    def typer_argv(self) -> list[str]:
        """argv with the global options in front, where the Typer application reads them."""
        if self.dangling is not None:
            # Alone, so that the root reports its missing value; after the command it
            # was "No such option: --wiki", as if the global option did not exist there.
            return [self.dangling]
        front = [WIKI_FLAGS[0], self.wiki] if self.wiki is not None else []
        return front + ([DEBUG_FLAG] if self.debug else []) + self.rest

    @property
    def command(self) -> str | None:
        """The first word of the command line (the command), if any."""
        return self.rest[0] if self.rest and not self.rest[0].startswith("-") else None

    @property
    def wants_json(self) -> bool:
        """True when --json was given (before any `--`)."""
        return JSON_FLAG in _options_part(self.rest)

    @property
    def wants_help(self) -> bool:
        """True when -h/--help was given (before any `--`)."""
        return any(a in HELP_FLAGS for a in _options_part(self.rest))


def _options_part(args: list[str]) -> list[str]:
    return args[: args.index("--")] if "--" in args else args


def scan_globals(argv: list[str]) -> Globals:
    """Take --wiki/-w PATH, --wiki=PATH and --debug out of argv, wherever they stand before `--`.

    The last --wiki wins, as with any repeated option.
    """
    wiki: str | None = None
    debug = False
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg in WIKI_FLAGS and i + 1 < len(argv):
            wiki = argv[i + 1]
            i += 2
            continue
        if arg.startswith(WIKI_FLAGS[0] + "="):
            wiki = arg.split("=", 1)[1]
        elif arg == DEBUG_FLAG:
            debug = True
        else:
            rest.append(arg)
        i += 1
    dangling = rest[-1] if rest and rest[-1] in WIKI_FLAGS and "--" not in rest else None
    return Globals(wiki, debug, rest, dangling)
