"""A library imports without the optional packages it loads eagerly: they look uninstalled to
the importing thread only, only during the block, and never when already loaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalstress.core.lightimport import importing_without

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`lightlib` uses `lightdep` when it can import it, as nltk uses scipy."""
    (tmp_path / "lightdep.py").write_text("VALUE = 42\n")
    (tmp_path / "lightlib.py").write_text(textwrap.dedent("""
        try:
            import lightdep
            FOUND = True
        except ImportError:
            FOUND = False
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in ("lightdep", "lightlib"):
        sys.modules.pop(name, None)


@pytest.mark.usefixtures("modules")
def test_the_refused_package_is_unseen_during_the_block_and_imports_after() -> None:
    seen_elsewhere: list[bool] = []
    with importing_without("lightlib", "lightdep"):
        import lightlib

        other = threading.Thread(target=lambda: seen_elsewhere.append(
            __import__("lightdep").VALUE == 42))
        other.start()
        other.join()
    assert lightlib.FOUND is False
    assert seen_elsewhere == [True]  # another thread imports it meanwhile
    import lightdep

    assert lightdep.VALUE == 42


@pytest.mark.usefixtures("modules")
def test_a_package_already_loaded_is_left_to_the_library() -> None:
    import lightdep  # noqa: F401

    with importing_without("lightlib", "lightdep"):
        import lightlib
    assert lightlib.FOUND is True


@pytest.mark.usefixtures("modules")
def test_a_library_already_loaded_refuses_nothing() -> None:
    import lightlib  # noqa: F401

    with importing_without("lightlib", "lightdep"):
        import lightdep
    assert lightdep.VALUE == 42


def test_rouge_stems_without_loading_scipy_or_scikit_learn() -> None:
    """nltk's Porter stemmer, as ROUGE uses it, costs 0.15 s instead of a second of scipy,
    scikit-learn and pandas; nothing else in the process is kept from them."""
    script = textwrap.dedent("""
        import sys
        from evalstress.evaluators.base import ScoreRequest, create_evaluator
        rouge = create_evaluator("rouge")
        print(sorted(m for m in ("nltk", "scipy", "sklearn") if m in sys.modules))
        # stemmed, "running" matches "runs": ROUGE-1 of one word against one word is 1
        [row] = rouge.score_batch([ScoreRequest("running", references=("runs",))])
        print(row["rouge1"].value)
        print(sorted(m for m in ("nltk", "scipy", "sklearn") if m in sys.modules))
        import scipy.stats
        print(scipy.stats.spearmanr([1, 2, 3], [1, 3, 2]).statistic)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["[]", "1.0", "['nltk']", "0.5"]
