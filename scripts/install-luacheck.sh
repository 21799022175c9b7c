#!/bin/sh
# Installs luacheck, the Lua linter `pnpm lint` runs on the Redis script (scripts/luacheck.mjs), when it is
# missing; does nothing when it is on the PATH. scripts/test-setup.sh (the first step of `pnpm test`) and
# `pnpm test:fast` run it.
set -eu
install_luacheck() {
command -v luacheck >/dev/null 2>&1 && return 0
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
}
install_luacheck
