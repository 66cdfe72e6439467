#!/usr/bin/env bash
# Installs evalstress with every extra its tests exercise, on a fresh machine of this project's kind.
#
# - torch comes first and pinned: the pinned CPU build lies on the machine's disk, while an
#   unpinned torch, asked for by another package, would pull a multi-GB CUDA build;
# - llama-cpp-python (the local judge server of the llm-local extra) builds from source where no
#   wheel fits, about 15 minutes on 2 cores; GGML_NATIVE=OFF makes that build portable.
set -euo pipefail
cd "$(dirname "$0")/.."
pip_install() { python -m pip install --quiet --disable-pip-version-check "$@"; }
pip_install "torch==2.13.0"
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" pip_install -e ".[dev,models,llm,llm-local,ray,fast]"
