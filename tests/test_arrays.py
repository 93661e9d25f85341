"""Array files a user hands over: every kind of damage is an ArrayFileError naming the file."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from lstmgraph.arrays import ArrayFileError, numbers, read_array, read_npz, write_array


def _npz(path, **arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    return path


def test_inputs_from_npy_npz_and_csv(tmp_path):
    values = np.arange(6.0).reshape(3, 2)
    np.save(tmp_path / "x.npy", values)
    _npz(tmp_path / "one.npz", anything=values)
    _npz(tmp_path / "named.npz", inputs=values, other=np.zeros(2))
    (tmp_path / "x.csv").write_text("a,b\n0,1\n2,3\n4,5\n")
    (tmp_path / "bare.csv").write_text("0,1\n2,3\n\n4,5\n")
    for name in ("x.npy", "one.npz", "named.npz", "x.csv", "bare.csv"):
        np.testing.assert_array_equal(read_array(tmp_path / name), values, err_msg=name)


def test_outputs_round_trip_as_npy_and_csv(tmp_path):
    values = np.array([[0.1, 1 / 3], [2e-300, -5.0]])
    write_array(tmp_path / "y.npy", values)
    write_array(tmp_path / "y.csv", values)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), values)
    np.testing.assert_array_equal(read_array(tmp_path / "y.csv"), values)  # 17 digits: exact
    with pytest.raises(ArrayFileError, match="expected a file ending in .npy or .csv"):
        write_array(tmp_path / "y.txt", values)


def _damaged(tmp_path):
    good = _npz(tmp_path / "good.npz", w=np.ones((3, 2)))
    raw = good.read_bytes()
    (tmp_path / "folder.npz").mkdir()
    (tmp_path / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "corrupted.npz").write_bytes(raw[:40] + bytes(80) + raw[120:])
    (tmp_path / "text.npz").write_text("not an archive")
    np.save(tmp_path / "objects.npy", np.array([None], dtype=object), allow_pickle=True)
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (10000000000000,), }"
    header += b" " * (118 - len(header)) + b"\n"
    (tmp_path / "bomb.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    (tmp_path / "zip.npy").write_bytes(raw)
    (tmp_path / "text.npy").write_text("hello")
    _npz(tmp_path / "two.npz", a=np.ones(2), b=np.ones(2))
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    return {"absent.npz": "no such file", "folder.npz": "is a folder",
            "truncated.npz": "not an .npz archive", "corrupted.npz": "not an .npz archive",
            "text.npz": "not an .npz archive", "objects.npy": "the array holds Python objects",
            "bomb.npy": "declares an array larger than the memory", "zip.npy": "rename it to .npz",
            "text.npy": "does not begin with the .npy header",
            "two.npz": "holds 2 arrays (a, b), none named 'inputs'",
            "bad.csv": "line 2: 'x' is not a number", "ragged.csv": "line 2 has 1 columns, line 1 has 2",
            "x.txt": "cannot tell the format"}


def test_every_kind_of_damage_names_the_file(tmp_path):
    for name, words in _damaged(tmp_path).items():
        with pytest.raises(ArrayFileError) as caught:
            read_array(tmp_path / name)
        assert str(caught.value).startswith(f"{tmp_path / name}: ") and words in str(caught.value), name


def test_a_name_too_long_for_the_file_system_is_named(tmp_path):
    """Path.exists raised ENAMETOOLONG: run --inputs, train --data with a 300-byte name were tracebacks."""
    for name in ("b" * 300 + ".npy", "b" * 300 + ".npz", "b" * 300 + ".csv"):
        with pytest.raises(ArrayFileError) as caught:
            read_array(tmp_path / name)
        assert str(caught.value).startswith(f"{tmp_path / name}: a name in the path is longer than")


def test_an_archive_is_measured_before_it_is_unpacked(tmp_path, monkeypatch):
    monkeypatch.setattr("lstmgraph.arrays.MAX_ARCHIVE_BYTES", 10_000)
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("w.npy", bytes(20_000))  # compresses to a few dozen bytes
    with pytest.raises(ArrayFileError, match="unpacks to 20,000 bytes, more than 10,000"):
        read_npz(tmp_path / "bomb.npz")


def test_only_real_finite_numbers_pass(tmp_path):
    path = tmp_path / "x.npy"
    assert numbers(path, "x", np.array([1, 2], dtype=np.int32)).dtype == np.float64
    for array, words in ((np.array(["a"]), "string values"), (np.array([1j]), "complex values"),
                         (np.array([[0.0, np.inf]]), "NaN or infinite values in x (the first at index (0, 1))")):
        with pytest.raises(ArrayFileError, match=words.replace("(", r"\(").replace(")", r"\)")):
            numbers(path, "x", array)


def test_read_npz_refuses_pickles(tmp_path):
    buffer = io.BytesIO()
    np.savez(buffer, evil=np.array([object()], dtype=object))
    (tmp_path / "evil.npz").write_bytes(buffer.getvalue())
    with pytest.raises(ArrayFileError, match="'evil' holds Python objects, which only pickle could read"):
        read_npz(tmp_path / "evil.npz")


@pytest.mark.parametrize("content", [b"", b"garbage"], ids=["empty", "no header"])
def test_read_npz_refuses_a_member_named_npy_that_is_no_array(tmp_path, content):
    """Before: numpy handed on such a member's raw bytes, and every command reading data failed
    with an AttributeError traceback ('bytes' object has no attribute 'dtype')."""
    import zipfile
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as archive:
        archive.writestr("inputs.npy", content)
        array = io.BytesIO()
        np.save(array, np.zeros((3, 1)))
        archive.writestr("targets.npy", array.getvalue())
    with pytest.raises(ArrayFileError, match=r"bad.npz: 'inputs.npy' is not an .npy array \(it lacks numpy's header\)"):
        read_npz(tmp_path / "bad.npz")


def test_a_csv_error_names_the_line_of_the_file(tmp_path):
    """Lines count from the file's first, header and blank lines included; a first row holding
    a number is data, so a typo in it is an error rather than a silently dropped step."""
    cases = {"a,b\n0,1\n\n2\n": "line 4 has 1 columns, line 2 has 2",
             "0,x\n2,3\n": "line 1: 'x' is not a number",
             "0,1,\n2,3\n": "line 1: '' is not a number"}
    for index, (text, words) in enumerate(cases.items()):
        (tmp_path / f"{index}.csv").write_text(text)
        with pytest.raises(ArrayFileError, match=words):
            read_array(tmp_path / f"{index}.csv")


def test_an_array_of_more_rows_than_asked_is_refused_before_it_is_read_whole(tmp_path, monkeypatch):
    """Before: read_array had no bound; a CSV of 20 million rows was read whole into Python lists
    (340 MB of text: 98 s and 13 GB) before `run` refused its steps. ``max_rows``: a CSV stops
    being read at the first row past it, an .npy's header is checked before its data is read."""
    from numpy.lib import format as npy_format

    from lstmgraph.arrays import TooManyRows

    (tmp_path / "x.csv").write_text("a,b\n" + "1,2\n" * 5)
    np.save(tmp_path / "x.npy", np.zeros((5, 2)))
    _npz(tmp_path / "x.npz", inputs=np.zeros((5, 2)))
    for name in ("x.csv", "x.npy", "x.npz"):
        assert read_array(tmp_path / name, max_rows=5).shape == (5, 2)
        with pytest.raises(TooManyRows, match=f"{name}: more than 4 rows") as raised:
            read_array(tmp_path / name, max_rows=4)
        assert raised.value.max_rows == 4
    with open(tmp_path / "lie.npy", "wb") as stream:  # a header of 10^11 rows over 64 bytes of data
        npy_format.write_array_header_1_0(stream, {"descr": "<f8", "fortran_order": False, "shape": (10**11, 4)})
        stream.write(bytes(64))
    monkeypatch.setattr(np, "load", lambda *args, **kwargs: pytest.fail("the data was read"))
    with pytest.raises(TooManyRows, match="more than 1,000 rows"):
        read_array(tmp_path / "lie.npy", max_rows=1000)
    lines = []

    class Counted:  # the CSV is read no further than the row past the bound
        def __init__(self, stream):
            self.stream = stream

        def __iter__(self):
            for line in self.stream:
                lines.append(line)
                yield line
    (tmp_path / "long.csv").write_text("1,2\n" * 10_000)
    import lstmgraph.arrays as arrays
    reader = arrays.csv.reader
    monkeypatch.setattr(arrays.csv, "reader", lambda stream: reader(Counted(stream)))
    with pytest.raises(TooManyRows):
        read_array(tmp_path / "long.csv", max_rows=10)
    assert len(lines) <= 11


def test_a_csv_line_longer_than_a_row_may_be_is_refused_before_it_is_split(tmp_path, monkeypatch):
    """Before: one line of 40 MB ("1.5,1.5,...") took 850 MB as the CSV reader split it into
    ten million cells; a line longer than MAX_ROW_BYTES is now refused, naming its line, unread."""
    import lstmgraph.arrays as arrays

    monkeypatch.setattr(arrays, "MAX_ROW_BYTES", 100)
    (tmp_path / "wide.csv").write_text("1,2\n" + ",".join(["1.5"] * 50) + "\n")
    with pytest.raises(ArrayFileError, match=r"wide.csv: line 2 is longer than 100 characters"):
        read_array(tmp_path / "wide.csv")
    (tmp_path / "fits.csv").write_text("a,b\n" + "1,2\n" * 50)
    assert read_array(tmp_path / "fits.csv").shape == (50, 2)


def test_an_archive_s_members_are_counted_before_its_directory_is_read(tmp_path, monkeypatch):
    """Before: an .npz of millions of empty members had its whole directory read (seconds and
    gigabytes) before anything was checked."""
    monkeypatch.setattr("lstmgraph.arrays.MAX_ARCHIVE_MEMBERS", 3)
    with zipfile.ZipFile(tmp_path / "many.npz", "w") as archive:
        for index in range(4):
            archive.writestr(f"a{index}.npy", b"")
    monkeypatch.setattr("zipfile.ZipFile._RealGetContents", lambda self: pytest.fail("directory read before counted"))
    with pytest.raises(ArrayFileError, match="an archive of 4 members, more than the 3"):
        read_npz(tmp_path / "many.npz")
