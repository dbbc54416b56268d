"""Query products remembered per vector segment (index/vector_products.py): reused only for the same bytes."""

from __future__ import annotations

import numpy as np

from memwiki.index import vector_products, vectors


def test_a_product_is_reused_for_the_same_file_and_query_only(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "vectors-5.npy"
    vectors.save_matrix(path, rng.standard_normal((50, 8)).astype(np.float32))
    query = rng.standard_normal(8).astype(np.float32)
    calls: list[int] = []

    def compute(part, q):
        calls.append(1)
        return part @ q

    part = vectors.load_matrix(path, 50, 8)
    key = vector_products.identity(path)
    first = vector_products.product(part, key, query, compute)
    again = vector_products.product(part, key, query, compute)
    assert again is first and len(calls) == 1
    with open(path, "rb") as fh:  # an open file is the same file
        assert vector_products.identity(fh) == key
    other = vector_products.product(part, key, query * 2, compute)
    assert len(calls) == 2 and np.array_equal(other, part @ (query * 2))
    # The same name written again (as a rebuild after damage would): other bytes, other key
    vectors.save_matrix(path, rng.standard_normal((50, 8)).astype(np.float32))
    assert vector_products.identity(path) != key
    fresh = vectors.load_matrix(path, 50, 8)
    got = vector_products.product(fresh, vector_products.identity(path), query, compute)
    assert len(calls) == 3 and np.array_equal(got, fresh @ query)
    assert vector_products.identity(tmp_path / "missing.npy") is None


def test_only_the_last_few_products_are_kept(tmp_path):
    part = np.ones((4, 2), dtype=np.float32)
    for n in range(vector_products.KEEP + 5):
        vector_products.product(part, ("seg", n), np.ones(2, dtype=np.float32), lambda p, q: p @ q)
    assert len(vector_products._PRODUCTS) <= vector_products.KEEP
