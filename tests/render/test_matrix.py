"""The layout engine's choice of form: the bisection over elided columns picks what trying every count would."""

import numpy as np
import pytest

from attncli.render.matrix import Form, Matrix, columns_shown


def _every_count(m: Matrix, width: int) -> Form:
    """`Matrix.choose` for values that need eliding, the slow way: every column count, most first."""
    for form in m.forms():
        if m.width(form) <= width:
            return form
    n = m.array.shape[1]
    for labels in ("tokens", "numbers"):
        for keep in range(n - 1, 1, -1):
            for short in (False, True):
                form = Form(short, labels, tuple(columns_shown(n, keep)))
                if m.width(form) <= width:
                    return form
    return Form(True, "numbers", tuple(columns_shown(n, 2)))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_choose_finds_the_most_columns_that_fit(seed, width):
    rng = np.random.default_rng(seed)
    n_rows, n_cols = int(rng.integers(2, 12)), int(rng.integers(3, 90))
    x = rng.normal(size=(n_rows, n_cols)) * 10.0 ** rng.integers(-3, 4, size=(n_rows, n_cols))
    rows = [f"tok{i}" * int(rng.integers(1, 4)) for i in range(n_rows)]
    m = Matrix(x, rows, None, precision=int(rng.integers(1, 5)))
    assert m.choose(width) == _every_count(m, width)


def test_a_wide_matrix_is_measured_once_per_column():
    m = Matrix(np.arange(4 * 900, dtype=float).reshape(4, 900), ["a", "b", "c", "d"], None)
    m.choose(80)
    assert len(m._column_widths) <= 2 * 2 * 900  # (compact or not) x (labels) per column, never per count tried
