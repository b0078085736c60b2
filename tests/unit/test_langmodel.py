"""The memory-mapped py3langid model gives py3langid's own answers, builds once, and falls back."""
import os

import py3langid
import pytest

from transforms.page.formats import langmodel
from transforms.page.formats.document import detect_language

TEXTS = [
    "The quick brown fox jumps over the lazy dog and runs far away into the woods.",
    "Der schnelle braune Fuchs springt über den faulen Hund und läuft weit weg.",
    "Le renard brun rapide saute par-dessus le chien paresseux et court loin d'ici.",
    "El rápido zorro marrón salta sobre el perro perezoso y corre lejos al bosque.",
    "敏捷的棕色狐狸跳过了懒狗，然后跑进了远处的森林里面去了。这是一个测试句子。",
    "Быстрая коричневая лиса прыгает через ленивую собаку и убегает далеко в лес.",
    "Szybki brązowy lis przeskakuje nad leniwym psem i ucieka daleko do lasu.",
    "素早い茶色の狐が怠け者の犬を飛び越えて、遠くの森へ走っていきました。",
    "12345 !!! ??? ... --- +++",
    "",
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BEAMCRAWL_CACHE", str(tmp_path / "cache"))
    langmodel.classifier.cache_clear()
    yield tmp_path / "cache"
    langmodel.classifier.cache_clear()


def test_mapped_model_answers_as_py3langid(cache):
    d = langmodel.build(langmodel.cache_dir())
    mapped = langmodel.open_identifier(d)
    for text in TEXTS + [t * 20 for t in TEXTS]:
        assert mapped.classify(text) == py3langid.classify(text), text
    assert detect_language(TEXTS[1] * 3) == "de"


def test_built_once_then_mapped(cache):
    langmodel.classifier()("a first text that makes the cache")
    d = langmodel.cache_dir()
    files = sorted(p.name for p in d.iterdir())
    assert files == ["classes.json", "nextmove.npy", "out.npy", "pc.npy", "ptc.npy", "row.npy"]
    stamp = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}
    langmodel.classifier.cache_clear()
    assert langmodel.classifier()(TEXTS[0])[0] == "en"
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == stamp
    assert [p.name for p in cache.iterdir()] == [d.name]   # no temporary directory left


def test_second_builder_losing_the_rename_keeps_the_first(cache):
    d = langmodel.cache_dir()
    langmodel.build(d)
    langmodel.build(d)            # a concurrent builder finding the cache in place
    assert langmodel.open_identifier(d).classify(TEXTS[2]) == py3langid.classify(TEXTS[2])
    assert [p.name for p in cache.iterdir()] == [d.name]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_unwritable_cache_falls_back_to_py3langid(cache, caplog):
    cache.mkdir()
    cache.chmod(0o500)
    try:
        assert langmodel.classifier()(TEXTS[3]) == py3langid.classify(TEXTS[3])
        assert "cache unusable" in caplog.text
    finally:
        cache.chmod(0o700)


def test_cache_path_that_is_a_file_falls_back(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("BEAMCRAWL_CACHE", str(blocker))
    langmodel.classifier.cache_clear()
    try:
        assert langmodel.classifier()(TEXTS[1]) == py3langid.classify(TEXTS[1])
        assert "cache unusable" in caplog.text
    finally:
        langmodel.classifier.cache_clear()
