#!/bin/sh
# Installs Debian's chromium at /usr/bin/chromium, the browser @sluice/cli's HTML report test drives through
# playwright-core, when it is missing; does nothing when it is there. scripts/test-setup.sh (the first step of
# `pnpm test`) runs it.
set -eu
[ -x /usr/bin/chromium ] && exit 0
echo "install-chromium: /usr/bin/chromium is missing; installing it"
if command -v apt-get >/dev/null 2>&1; then
  sudo=''
  [ "$(id -u)" = 0 ] || sudo='sudo'
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "install-chromium: no apt-get here; install chromium so that /usr/bin/chromium exists (the @sluice/cli HTML report test launches it)" >&2
  exit 1
fi
[ -x /usr/bin/chromium ] || { echo "install-chromium: /usr/bin/chromium is still missing" >&2; exit 1; }
