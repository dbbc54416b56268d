#!/usr/bin/env bash
# Build a demo wiki from examples/demo-wiki/ in a temporary directory, list it, retrieve from it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-$(mktemp -d)/demo-wiki}"
memwiki=".venv/bin/memwiki"
[ -x "$memwiki" ] || memwiki="memwiki"

"$memwiki" init "$target"
cp -R "$here/demo-wiki/memory" "$here/demo-wiki/skill" "$target/"
"$memwiki" --wiki "$target" commit -m "demo: import the example wiki"
echo
echo "\$ memwiki --wiki $target list"
"$memwiki" --wiki "$target" list
echo
echo "\$ memwiki --wiki $target retrieve \"how do I cut a release of the billing service?\" -k 3"
"$memwiki" --wiki "$target" retrieve "how do I cut a release of the billing service?" -k 3 --budget 600
