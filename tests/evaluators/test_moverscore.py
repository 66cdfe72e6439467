"""MoverScore equals its definition computed directly: MiniLM states, hand-built masses and
costs, and pyemd's earth mover's distance (an implementation apart from the POT one we use)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pyemd = pytest.importorskip("pyemd")

HYP = "The council approved the new park on Monday."
REFS = ("A new park was approved by the city council.", "On Monday the park plan passed.")


def direct(minilm: str, hyp: str, ref: str, *, layers: int = 5, stop: frozenset[str] = frozenset(),
           idf: dict[int, float] | None = None, unseen: float = 1.0) -> float:
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm)
    model = transformers.AutoModel.from_pretrained(minilm).eval()

    def bag(text: str) -> tuple[object, object]:
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            states = model(**enc, output_hidden_states=True).hidden_states
        layer = torch.stack(states[-layers:])[:, 0]
        layer = layer / layer.norm(dim=-1, keepdim=True)
        vec = layer[0] if layers == 1 else torch.cat(
            [layer.min(0).values, layer.mean(0), layer.max(0).values], -1)
        ids = enc["input_ids"][0].tolist()
        tokens = tokenizer.convert_ids_to_tokens(ids)
        keep = [k for k, t in enumerate(tokens)
                if t not in string.punctuation and "##" not in t and t not in stop]
        weights = np.array([(idf or {}).get(ids[k], unseen) for k in keep], dtype=np.float64)
        return vec[keep].numpy().astype(np.float64), weights

    ref_vec, ref_w = bag(ref)
    hyp_vec, hyp_w = bag(hyp)
    raw = np.concatenate([ref_vec, hyp_vec])
    raw = raw / (np.linalg.norm(raw, axis=1, keepdims=True) + 1e-6)
    n = len(raw)
    cost = np.array([[float(((raw[i] - raw[j]) ** 2).sum()) for j in range(n)] for i in range(n)])
    c1 = np.concatenate([ref_w / ref_w.sum(), np.zeros(len(hyp_w))])
    c2 = np.concatenate([np.zeros(len(ref_w)), hyp_w / hyp_w.sum()])
    return 1.0 - pyemd.emd(c1, c2, cost)


@pytest.mark.slow
def test_moverscore_equals_a_direct_pyemd_computation(minilm: str) -> None:
    row = create_evaluator("moverscore").score([ScoreRequest(HYP, "", REFS)])[0]
    expected = np.mean([direct(minilm, HYP, ref) for ref in REFS])  # mean over references
    assert row["moverscore"].value == pytest.approx(expected, abs=1e-5)
    last = create_evaluator("moverscore:layers=1").score([ScoreRequest(HYP, "", REFS[:1])])[0]
    assert last["moverscore"].value == pytest.approx(direct(minilm, HYP, REFS[0], layers=1),
                                                     abs=1e-5)


@pytest.mark.slow
def test_moverscore_with_idf_and_stop_words(minilm: str, tmp_path: Path) -> None:
    corpus = tmp_path / "idf.txt"
    lines = ["The park opened.", "The council met on Monday.", "A plan passed."]
    corpus.write_text("\n".join(lines), encoding="utf-8")
    stops = tmp_path / "stop.txt"
    stops.write_text("the a on by was", encoding="utf-8")
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm)
    df: dict[int, int] = {}
    for line in lines:
        for i in set(tokenizer(line)["input_ids"]):
            df[i] = df.get(i, 0) + 1
    idf = {i: float(np.log(4 / (c + 1))) for i, c in df.items()}  # log((N+1)/(df+1)), N = 3
    evaluator = create_evaluator({"name": "moverscore", "idf_corpus": str(corpus),
                                  "stopwords": str(stops)})
    row = evaluator.score([ScoreRequest(HYP, "", REFS[:1])])[0]
    expected = direct(minilm, HYP, REFS[0], stop=frozenset({"the", "a", "on", "by", "was"}),
                      idf=idf,
                      unseen=float(np.log(4)))
    assert row["moverscore"].value == pytest.approx(expected, abs=1e-5)


@pytest.mark.slow
def test_moverscore_of_a_text_against_itself_is_one_and_damage_lowers_it() -> None:
    evaluator = create_evaluator("moverscore")
    same, damaged = evaluator.score([ScoreRequest(HYP, "", (HYP,)),
                                     ScoreRequest("Monday park the on.", "", (HYP,))])
    assert same["moverscore"].value == pytest.approx(1.0, abs=1e-6)
    assert damaged["moverscore"].value < same["moverscore"].value  # type: ignore[operator]


def test_moverscore_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="layers"):
        create_evaluator("moverscore:layers=3")
    with pytest.raises(ValueError, match="stopwords"):
        create_evaluator("moverscore:stopwords=nltk")
    row = create_evaluator("moverscore").score([ScoreRequest("A text.", "", ())])[0]
    assert not row["moverscore"].ok
