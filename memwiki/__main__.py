"""python -m memwiki: the same as the memwiki command."""

from memwiki.cli import main

raise SystemExit(main())
