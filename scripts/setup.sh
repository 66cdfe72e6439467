#!/usr/bin/env bash
# Installs evalstress with every extra its tests exercise, on a fresh machine of this project's kind.
#
# - every version comes from requirements/lock.txt (pip's -c): a fresh machine gets the set CI
#   tested, whatever the registry serves that day; `python scripts/refresh_lock.py` moves the
#   lock (it runs this script with EVALSTRESS_UNLOCKED=1 in a new environment, then the suite);
# - torch comes first and pinned: the pinned CPU build lies on the machine's disk, while an
#   unpinned torch, asked for by another package, would pull a multi-GB CUDA build;
# - llama-cpp-python (the local judge server of the llm-local extra) builds from source where no
#   wheel fits, about 15 minutes on 2 cores; GGML_NATIVE=OFF makes that build portable.
set -euo pipefail
cd "$(dirname "$0")/.."
pip_install() { python -m pip install --quiet --disable-pip-version-check "$@"; }
locked=(-c requirements/lock.txt)
if [ "${EVALSTRESS_UNLOCKED:-}" = 1 ]; then locked=(); fi
pip_install "${locked[@]}" "torch==2.13.0"
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" pip_install "${locked[@]}" \
  -e ".[dev,models,llm,llm-local,attack,ray,fast]"

# Chromium from Debian for the report's browser tests (Playwright drives it; no browser is
# downloaded). Idempotent; where apt-get is missing the browser tests skip and say why.
if [ -x /usr/bin/chromium ]; then
  :
elif command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core >/dev/null
else
  echo "setup.sh: apt-get is not available: install Chromium at /usr/bin/chromium yourself," \
       "or the report's browser tests (tests/report/test_browser.py) will skip" >&2
fi
