#!/bin/sh
# `pnpm test`'s first step: installs what the tests need beyond what the README's install command brings (which is
# only what the demo needs). Each step does nothing when its part is already there, so a second run takes a second.
# - luacheck (install-luacheck.sh): `pnpm lint` lints the Redis script's Lua with it;
# - Chromium (install-chromium.sh): @sluice/cli's HTML report and dashboard tests drive it;
# - Node 22 and 24 in .tools/, each with a better-sqlite3 built for it (install-node-versions.sh, about a minute per
#   version the first time): scripts/test-node-versions.mjs reruns the Node-specific packages on them.
set -eu
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
sh "$here/install-luacheck.sh"
sh "$here/install-chromium.sh"
sh "$here/install-node-versions.sh"
