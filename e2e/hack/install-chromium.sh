#!/usr/bin/env bash
# Installs Chromium from Debian's packages for the dashboard's browser e2e (e2e/plugin/dashboard.e2e.ts drives it
# headless through playwright-core, which downloads no browser of its own). Does nothing when a chromium is on PATH
# already. Uses sudo only when not root.
#   prints the path of the chromium binary on its last line
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  echo "installing chromium (Debian package)" >&2
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
fi
command -v chromium
