import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from frb.io import read_dat, write_dat


def _read_text(tmp_path, text, name="x.dat"):
    p = tmp_path / name
    p.write_text(text)
    return read_dat(p)


@pytest.mark.parametrize(
    "text, value",
    [
        ("1.0000000000D0", 1.0),
        ("   10.0000000000D0", 10.0),
        ("-0.609860759302936D0", -0.609860759302936),
        ("2.5d-3", 2.5e-3),
        ("1.0e+00", 1.0),
        ("-3.5456085277494165E-02", -3.5456085277494165e-02),
        (".5", 0.5),
        ("-.5e1", -5.0),
        ("1.", 1.0),
        ("5", 5.0),
        ("+7", 7.0),
        ("1.5Q2", 150.0),
        ("1.0+05", 1.0e5),
        ("2.0-3", 2.0e-3),
        ("0.0000000000000000", 0.0),
        ("-0.0", -0.0),
        ("4.9406564584124654E-324", 5e-324),
    ],
)
def test_read_single_values(tmp_path, text, value):
    v = _read_text(tmp_path, text + "\n")
    assert v.dtype == np.float64 and v.shape == (1,)
    assert v[0] == value
    assert math.copysign(1.0, v[0]) == math.copysign(1.0, value)


def test_read_separators_and_repeats(tmp_path):
    text = " 1.0, 2.0\t3.0\n\n  4.0 ,5.0,\n6.0\r\n3*0.5 2*1D1\n"
    v = _read_text(tmp_path, text)
    np.testing.assert_array_equal(v, [1, 2, 3, 4, 5, 6, 0.5, 0.5, 0.5, 10, 10])


def test_read_special_values(tmp_path):
    v = _read_text(tmp_path, "NaN -Inf +infinity inf\n")
    assert np.isnan(v[0]) and v[1] == -np.inf and v[2] == np.inf and v[3] == np.inf


def test_read_empty_file(tmp_path):
    v = _read_text(tmp_path, "\n  \n")
    assert v.shape == (0,) and v.dtype == np.float64


def test_read_is_correctly_rounded(tmp_path):
    # 17 significant digits in a D format must give the nearest double
    x = 0.1 + 0.2
    v = _read_text(tmp_path, f"{x:.16e}".replace("e", "D") + "\n")
    assert v[0] == x


@pytest.mark.parametrize(
    "text, line, bad",
    [
        ("1.0\n2.0\nabc\n", 3, "abc"),
        ("1.0 1.0x\n", 1, "1.0x"),
        ("1.0e\n", 1, "1.0e"),
        ("1_000\n", 1, "1_000"),
        ("1.0\n\n2.0 / 3.0\n", 3, "/"),
        ("1.0 .\n", 1, "."),
        ("1.0 'a'\n", 1, "'a'"),
        (".TRUE.\n", 1, ".TRUE."),
        ("1.0 3*\n", 1, "3*"),
        ("0*1.0\n", 1, "0*1.0"),
        ("1.0 D0\n", 1, "D0"),
    ],
)
def test_read_garbage_names_file_and_line(tmp_path, text, line, bad):
    p = tmp_path / "bad.dat"
    p.write_text(text)
    with pytest.raises(ValueError) as exc:
        read_dat(p)
    msg = str(exc.value)
    assert f"bad.dat:{line}:" in msg
    assert bad in msg


def test_read_null_value_is_an_error(tmp_path):
    p = tmp_path / "null.dat"
    p.write_text("1.0\n2.0,,3.0\n")
    with pytest.raises(ValueError, match=r"null\.dat:2:.*null"):
        read_dat(p)


def test_read_missing_file(tmp_path):
    with pytest.raises(OSError):
        read_dat(tmp_path / "does_not_exist.dat")


def test_write_one_value_per_line(tmp_path):
    p = tmp_path / "out.dat"
    Q = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    write_dat(p, Q.T)  # by columns
    lines = p.read_text().splitlines()
    assert len(lines) == 9
    assert [float(s) for s in lines] == [1, 4, 7, 2, 5, 8, 3, 6, 9]
    assert lines[0] == " 1.0000000000000000e+00"
    write_dat(p, [-0.25])
    assert p.read_text() == "-2.5000000000000000e-01\n"


def test_write_empty(tmp_path):
    p = tmp_path / "empty.dat"
    write_dat(p, [])
    assert p.read_text() == ""
    assert read_dat(p).shape == (0,)


@given(arrays(np.float64, st.integers(0, 40), elements=st.floats(allow_nan=False, width=64)))
def test_round_trip_exact(tmp_path_factory, values):
    p = tmp_path_factory.mktemp("rt") / "rt.dat"
    write_dat(p, values)
    back = read_dat(p)
    assert back.shape == values.shape
    # bitwise identical, including signed zeros, subnormals and infinities
    np.testing.assert_array_equal(back.view(np.int64), values.view(np.int64))


def test_round_trip_nan(tmp_path):
    p = tmp_path / "nan.dat"
    write_dat(p, [np.nan, 1.0])
    back = read_dat(p)
    assert np.isnan(back[0]) and back[1] == 1.0


def test_round_trip_through_fortran_style(tmp_path):
    # what we write is also what a D-exponent rewrite reads back
    x = np.array([np.pi, -np.e, 1e-300, 6.02214076e23])
    p = tmp_path / "a.dat"
    write_dat(p, x)
    q = tmp_path / "b.dat"
    q.write_text(p.read_text().replace("e", "D"))
    np.testing.assert_array_equal(read_dat(q), x)


@pytest.mark.parametrize("n, count", [(0, 16), (1, 35), (2, 11), (3, 18), (4, 13)])
def test_read_published_inputs(published_dir, n, count):
    p = published_dir / f"init_example{n}.dat"
    if not p.is_file():
        pytest.skip(f"{p} not found")
    v = read_dat(p)
    assert v.shape == (count,)
    assert np.all(np.isfinite(v))
