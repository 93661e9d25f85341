"""A program's entries as affine runs (`lstmgraph.program.runs.affine_runs`)."""

from __future__ import annotations

import numpy as np

from lstmgraph.program.runs import affine_runs


def _entries(runs: np.ndarray) -> np.ndarray:
    """The entries the runs stand for, columns (4, n), in the order an executor takes them."""
    out = []
    for n_i, n_j, *fields in runs.tolist():
        base, stride_i, stride_j = (np.asarray(fields[k::3]) for k in range(3))
        out += [base + i * stride_i + j * stride_j for i in range(n_i) for j in range(n_j)]
    return np.asarray(out, dtype=np.int64).reshape(-1, 4).T


def test_a_dense_matrix_vector_product_is_one_run():
    """out[r] += W[r, s] * x[s] for 3 rows and 4 sources, row by row: one run of 3 lines of 4."""
    rows, sources = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    columns = np.stack([100 + rows.ravel(), 200 + 4 * rows.ravel() + sources.ravel(), 300 + sources.ravel(),
                        np.zeros(12, dtype=np.int64)])
    runs = affine_runs(columns)
    assert runs.tolist() == [[3, 4, 100, 1, 0, 200, 4, 1, 300, 0, 1, 0, 0, 0]]
    assert (_entries(runs) == columns).all()


def test_irregular_entries_are_kept_in_order_whatever_runs_they_form():
    rng = np.random.default_rng(5)
    columns = rng.integers(0, 9, size=(4, 40))
    columns[:, 10:20] = np.arange(10) * np.array([[1], [2], [0], [3]])  # one line inside
    runs = affine_runs(columns)
    assert (_entries(runs) == columns).all()
    assert len(runs) < 40


def test_no_entries_no_runs():
    assert affine_runs(np.zeros((4, 0), dtype=np.int64)).shape == (0, 14)


def test_lines_are_cut_greedily_and_a_lone_last_entry_has_no_stride():
    """Entries 0,1,2 step by 1 (one line of 3); 10,20 form the next line (a step of 10); 7 is
    alone. The lines differ in length, so each is a run of one line."""
    out = np.array([0, 1, 2, 10, 20, 7])
    columns = np.stack([out, out, np.zeros(6, dtype=np.int64), np.zeros(6, dtype=np.int64)])
    runs = affine_runs(columns)
    assert runs[:, :2].tolist() == [[1, 3], [1, 2], [1, 1]]
    assert runs[:, 4].tolist() == [1, 10, 0]
    assert (_entries(runs) == columns).all()


def test_lines_of_one_shape_join_a_run_only_while_their_bases_step_alike():
    """Four lines of two entries with stride 1 at bases 0, 5, 10, 20: the first three are a
    run of 3 (base step 5); the fourth's base steps by 10 and starts a run."""
    out = np.array([0, 1, 5, 6, 10, 11, 20, 21])
    columns = np.stack([out, np.zeros(8, dtype=np.int64), np.zeros(8, dtype=np.int64), np.zeros(8, dtype=np.int64)])
    runs = affine_runs(columns)
    assert runs[:, :5].tolist() == [[3, 2, 0, 5, 1], [1, 2, 20, 0, 1]]
    assert (_entries(runs) == columns).all()
