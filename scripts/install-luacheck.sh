#!/bin/sh
# Installs luacheck, the Lua linter `pnpm lint` runs on the Redis script (scripts/luacheck.mjs), when it is
# missing; does nothing when it is on the PATH. The README's install command runs it.
set -eu
command -v luacheck >/dev/null 2>&1 && exit 0
echo "install-luacheck: luacheck is missing; installing it"
if command -v apt-get >/dev/null 2>&1; then
  sudo=''
  [ "$(id -u)" = 0 ] || sudo='sudo'
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua-check >/dev/null
elif command -v brew >/dev/null 2>&1; then
  brew install luacheck
elif command -v luarocks >/dev/null 2>&1; then
  luarocks install luacheck
else
  echo "install-luacheck: no apt-get, brew or luarocks here; install luacheck yourself (https://github.com/lunarmodules/luacheck)" >&2
  exit 1
fi
command -v luacheck >/dev/null 2>&1 || { echo "install-luacheck: luacheck is still not on the PATH" >&2; exit 1; }
