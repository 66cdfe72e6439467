#!/usr/bin/env bash
# Installs evalstress with everything its tests need, on a fresh machine of this project's kind.
# Torch comes first and pinned: the pinned CPU build lies on the machine's disk, while an unpinned
# torch, asked for by another package, would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
