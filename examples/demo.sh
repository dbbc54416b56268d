#!/usr/bin/env bash
# Build a demo wiki from examples/demo-wiki/ in a temporary directory, list it, retrieve from it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-$(mktemp -d)/demo-wiki}"
memwiki="$(pwd)/.venv/bin/memwiki"
[ -x "$memwiki" ] || memwiki="memwiki"

"$memwiki" init "$target"
cp -R "$here/demo-wiki/memory" "$here/demo-wiki/skill" "$target/"
"$memwiki" --wiki "$target" commit -m "demo: import the example wiki"
echo
echo "\$ memwiki --wiki $target list"
"$memwiki" --wiki "$target" list
echo
echo "\$ memwiki --wiki $target retrieve \"how do I cut a release of the billing service?\" -k 3 --budget 600"
"$memwiki" --wiki "$target" retrieve "how do I cut a release of the billing service?" -k 3 --budget 600

# Two projects: files with `project: billing` or `project: gridview`, and project/<slug>.md.
cp -R "$here/demo-projects/project" "$target/"
"$memwiki" --wiki "$target" commit -m "demo: project files for billing and gridview"
checkouts="$(dirname "$target")/checkouts"
for repo in billing gridview; do
    mkdir -p "$checkouts/$repo/src"
    git -C "$checkouts/$repo" init -q
    git -C "$checkouts/$repo" remote add origin "git@github.com:kestrel/$repo.git"
done
for repo in billing gridview; do
    echo
    echo "\$ cd $checkouts/$repo/src && memwiki project && memwiki --wiki $target retrieve \"what is the stack?\" --files -k 3"
    (cd "$checkouts/$repo/src" && "$memwiki" project && "$memwiki" --wiki "$target" retrieve "what is the stack?" --files -k 3)
done
