"""Content-seen's fingerprints made faster (issue #12) are the ones stored crawls hold: the
numpy MinHash gives datasketch's signatures bit for bit, and the body fingerprint without
regular expressions gives the content_fp they gave, so pages signed before and after compare."""
import random
import re

import datasketch
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.contentseen import fingerprints as fpm


def reference_shingles(text, k=fpm.SHINGLE):
    """The shingles as content-seen cut them before the numpy MinHash (the stored crawls')."""
    ws = re.findall(r"\w+", (text or "").lower())
    if len(ws) < fpm.MIN_WORDS:
        return []
    if len(ws) < k:
        return [" ".join(ws).encode("utf-8")]
    return list({" ".join(ws[i:i + k]).encode("utf-8") for i in range(len(ws) - k + 1)})


def reference_signature(text, num_perm=fpm.NUM_PERM, k=fpm.SHINGLE, seed=fpm.SEED):
    sh = reference_shingles(text, k)
    if not sh:
        return None
    m = datasketch.MinHash(num_perm=num_perm, seed=seed, scheme="affine32")
    m.update_batch(sh)
    return m.hashvalues


def check(texts, **kw):
    sigs, has = fpm.minhash_signatures(texts, **kw)
    assert sigs.dtype == np.uint32 and sigs.shape == (len(texts), kw.get("num_perm", fpm.NUM_PERM))
    for i, t in enumerate(texts):
        # one text's shingles (fpm.shingles, datasketch's input in test_contentseen) as well
        assert sorted(fpm.shingles(t, kw.get("shingle", fpm.SHINGLE))) == sorted(
            reference_shingles(t, kw.get("shingle", fpm.SHINGLE))), t
        ref = reference_signature(t, kw.get("num_perm", fpm.NUM_PERM), kw.get("shingle", fpm.SHINGLE),
                                  kw.get("seed", fpm.SEED))
        if ref is None:
            assert not has[i] and (sigs[i] == 0xFFFFFFFF).all()
        else:
            assert has[i] and np.array_equal(sigs[i], ref), (i, t[:80])


WORDS = ("the quick brown fox jumps over lazy dog Straße İstanbul ǅemal naïve café 東京 "
         "données_ouvertes x2 ΣΊΣΥΦΟΣ ﬁle 123 under_score").split()


def test_mixed_batch_of_ascii_unicode_short_and_empty_texts():
    rnd = random.Random(7)
    texts = ["the quick brown fox jumps over the lazy dog again", "too short", "", None,
             "ÀÉÎ õü straße STRASSE İstanbul ǅemal ΣΊΣΥΦΟΣ ﬁle naïve café 東京の天気は晴れ",
             "a_b c-d e.f g,h i;j k l m", "   \n\t  "]
    texts += [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 60))) for _ in range(200)]
    check(texts)


def test_pages_crossing_permutation_blocks():
    # one page alone bigger than a block, and many pages whose shingles straddle blocks
    rnd = random.Random(3)
    vocab = [f"w{i}" for i in range(5000)]
    big = " ".join(rnd.choice(vocab) for _ in range(3 * fpm._CHUNK))
    texts = [" ".join(rnd.choice(vocab) for _ in range(rnd.randint(3, 900))) for _ in range(60)]
    check(texts[:30] + [big] + texts[30:])


def test_a_batch_signed_in_groups_of_text(monkeypatch):
    # the batch is cut into k-grams a group of ~SIGN_CHARS characters at a time (memory):
    # groups of one text, of several, an empty group-filler, a text longer than a group
    rnd = random.Random(11)
    texts = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 120))) for _ in range(80)]
    texts[5], texts[40] = " ".join(rnd.choice(WORDS) for _ in range(2000)), None
    lengths = [len(t or "") for t in texts]
    monkeypatch.setattr(fpm, "SIGN_CHARS", 300)
    groups = list(fpm._groups(lengths, 300))
    assert [i for lo, hi in groups for i in range(lo, hi)] == list(range(len(texts)))
    assert all(sum(lengths[lo:hi]) <= 300 or hi - lo == 1 for lo, hi in groups)
    assert 10 < len(groups) < len(texts)   # several texts share a group; 5 is alone
    assert (5, 6) in groups
    check(texts)


def test_other_parameters():
    texts = ["one two three four five six seven", "alpha beta gamma delta epsilon zeta eta theta",
             "four words only here", "x y z w v u t s r q p"]
    check(texts, num_perm=64, shingle=3, seed=11)
    check(texts, num_perm=256, shingle=1, seed=1)
    check(texts, shingle=7)   # fewer words than k: the whole text is one shingle


def test_k_grams_too_many_for_one_int64_key():
    # thousands of distinct words and k = 6: a k-gram's word numbers no longer fit one int64,
    # so the batch's distinct k-grams come from comparing rows (shingling._distinct_rows)
    rnd = random.Random(5)
    vocab = [f"w{i}" for i in range(6000)]
    texts = [" ".join(rnd.choice(vocab) for _ in range(rnd.randint(0, 700))) for _ in range(40)]
    texts += [texts[3], texts[3].upper(), "one two three four five"]   # repeats, and a short text
    assert float(len(set(" ".join(texts).lower().split()))) ** 6 >= 2.0 ** 62
    check(texts, shingle=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=200), min_size=1, max_size=8))
def test_any_text(texts):
    check(texts)


def test_the_reference_can_tell():
    # a wrong seed or scheme would give other values: the comparison above is not vacuous
    t = "the quick brown fox jumps over the lazy dog again"
    sigs, _ = fpm.minhash_signatures([t], seed=2)
    assert not np.array_equal(sigs[0], reference_signature(t))
    legacy = datasketch.MinHash(num_perm=128, seed=1, scheme="legacy")
    legacy.update_batch(reference_shingles(t))
    assert not np.array_equal(fpm.minhash_signatures([t])[0][0], legacy.hashvalues.astype(np.uint32))


# ---------------------------------------------------------------- body fingerprint
def reference_normalise_body(body, url):
    """normalise_body as it was written with regular expressions (the stored content_fp's)."""
    if not body:
        return b""
    body = fpm._CANONICAL.sub(b"", body)
    if url:
        host = fpm._host_of(url).encode("ascii", "ignore")
        if host:
            body = re.sub(re.escape(host), b"\x00HOST\x00", body, flags=re.IGNORECASE)
    return re.sub(rb"[ \t\r\n\f\v]+", b" ", body).strip()


BODY_PARTS = [b" ", b"\t", b"\r\n", b"\x0b", b"\x0c", b"\xa0", b"\x85", b"x", b"<p>", b"site1.example",
              b"SiTe1.ExAmPlE", b"site1.examplesite1.example", b"site1.exampl", b"\xc3\x89",
              b'<link rel="canonical" href="http://site1.example/">', b"[::1]", b"\x00"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BODY_PARTS) | st.binary(max_size=6), max_size=30),
       st.sampled_from(["http://site1.example/x", "https://SITE1.example:8080/", "http://[::1]:80/",
                        None, "", "http://e.x/"]))
def test_body_fingerprint_is_the_regular_expressions(parts, url):
    body = b"".join(parts)
    assert fpm.normalise_body(body, url) == reference_normalise_body(body, url)
