#!/bin/sh
# `pnpm test`'s first step: installs what the tests need beyond what the README's install command brings (which is
# only what the demo needs). Each step does nothing when its part is already there, so a second run takes a second.
# - luacheck (install-luacheck.sh): `pnpm lint` lints the Redis script's Lua with it;
# - Chromium (install-chromium.sh): @sluice/cli's HTML report and dashboard tests drive it;
# - Node 22 and 24 in .tools/, each with a better-sqlite3 built for it (install-node-versions.sh): only
#   scripts/test-node-versions.mjs, `pnpm test`'s last step, needs them, and compiling SQLite twice takes minutes on
#   two cores. So a first run starts it in the background at the lowest CPU priority (nice 19: it takes only what the
#   lint, builds and tests leave idle), with its output in .tools/node-versions.log; the last step waits for it
#   (.tools/node-versions.status holds its exit code) and fails with that log if it failed.
set -eu
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
sh "$here/install-luacheck.sh"
sh "$here/install-chromium.sh"
tools="$here/../.tools"
mkdir -p "$tools"
# One install at a time: a run already under way (a second `sh scripts/test-setup.sh` during the tests) is left to
# finish and write its status.
if [ -f "$tools/node-versions.pid" ] && kill -0 "$(cat "$tools/node-versions.pid")" 2>/dev/null; then
  exit 0
fi
rm -f "$tools/node-versions.status"
# The subshell records the exit code whatever it is; its output never reaches the terminal after pnpm test ends.
(
  status=0
  nice -n 19 sh "$here/install-node-versions.sh" >"$tools/node-versions.log" 2>&1 || status=$?
  echo "$status" >"$tools/node-versions.status"
) </dev/null >/dev/null 2>&1 &
echo $! >"$tools/node-versions.pid"
