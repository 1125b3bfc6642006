#!/usr/bin/python3
"""Writes the io_* hostile inputs of this folder: safetensors and .npy files that lie about
themselves, each one way, for kiln's readers to refuse. Stdlib only; run it from anywhere:
    /usr/bin/python3 tests/data/hostile/make_io_cases.py
The output is deterministic, so the checked-in files are exactly what this script writes.
README.md in this folder says what each file lies about."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def safetensors(header, data=b"", length=None):
    """header: a dict (dumped compactly) or raw text; padded with spaces to a multiple of 8 like the
    reference writer. length overrides the header length field."""
    text = header if isinstance(header, (str, bytes)) else json.dumps(header, separators=(",", ":"))
    raw = text.encode() if isinstance(text, str) else text
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def f32(count):
    return struct.pack("<%df" % count, *[float(i) for i in range(count)])


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def npy(dict_text, data=b"", major=1, length=None, magic=b"\x93NUMPY"):
    """A .npy file; the header is padded so the data starts at a multiple of 64, as numpy does.
    length overrides the header length field."""
    field = 2 if major == 1 else 4
    header = dict_text.encode()
    header += b" " * (-(len(magic) + 2 + field + len(header) + 1) % 64) + b"\n"
    size = len(header) if length is None else length
    return magic + bytes([major, 0]) + (struct.pack("<H", size) if field == 2 else struct.pack("<I", size)) + header + data


def npy_dict(descr="<f4", fortran="False", shape="(2,)"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


W = {"w": entry("F32", [2], 0, 8)}

CASES = {
    # safetensors
    "io_truncated.safetensors": b"\x10\x00\x00",
    "io_header_length_lies.safetensors": safetensors(W, f32(2), length=1_000_000),
    "io_header_length_huge.safetensors": safetensors(W, f32(2), length=0xFFFFFFFFFFFFFFFF),
    "io_header_cut_short.safetensors": safetensors('{"w":{"dtype":"F32","shape":[2],"data_off'),
    "io_header_not_object.safetensors": safetensors("[1, 2]"),
    "io_1e400_metadata.safetensors": safetensors('{"__metadata__":{"a":1e400}}'),
    "io_1e400_offsets.safetensors": safetensors('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,1e400]}}', f32(2)),
    "io_1e400_shape.safetensors": safetensors('{"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,8]}}', f32(2)),
    "io_unknown_dtype.safetensors": safetensors({"w": entry("C64", [2], 0, 16)}, f32(4)),
    "io_offsets_overlap.safetensors": safetensors({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)}, f32(3)),
    "io_offsets_out_of_range.safetensors": safetensors({"w": entry("F32", [4], 8, 24)}, f32(2)),
    "io_offsets_end_before_begin.safetensors": safetensors({"w": entry("F32", [0], 8, 0)}, f32(2)),
    "io_offsets_not_integer.safetensors": safetensors('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0.0,8.0]}}', f32(2)),
    "io_offsets_negative.safetensors": safetensors({"w": entry("F32", [2], -8, 0)}, f32(2)),
    "io_shape_negative.safetensors": safetensors({"w": entry("F32", [-2], 0, 8)}, f32(2)),
    "io_shape_size_mismatch.safetensors": safetensors({"w": entry("F32", [2, 2], 0, 12)}, f32(3)),
    "io_shape_overflow.safetensors": safetensors({"w": entry("F32", [2**32, 2**32], 0, 0)}),
    "io_shape_overflow_empty.safetensors": safetensors({"w": entry("F32", [0, 2**62, 2**62], 0, 0)}),
    "io_duplicate_name.safetensors": safetensors('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                                 '"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32(2)),
    "io_duplicate_field.safetensors": safetensors('{"w":{"dtype":"F32","dtype":"I8","shape":[2],"data_offsets":[0,8]}}', f32(2)),
    "io_metadata_not_strings.safetensors": safetensors('{"__metadata__":{"epoch":3}}'),
    "io_bool_bytes.safetensors": safetensors({"m": entry("BOOL", [3], 0, 3)}, b"\x01\x00\x02"),
    "io_invalid_utf8.safetensors": safetensors(b'{"w\xff":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', f32(2)),
    # .npy
    "io_header_length_ffffffff.npy": npy(npy_dict(), f32(2), major=2, length=0xFFFFFFFF),
    "io_v3_header_length_ffffffff.npy": npy(npy_dict(), f32(2), major=3, length=0xFFFFFFFF),
    "io_header_length_lies.npy": npy(npy_dict(), f32(2), length=0xFFFF),
    "io_bad_magic.npy": npy(npy_dict(), f32(2), magic=b"\x93NUMPZ"),
    "io_version_4.npy": npy(npy_dict(), f32(2), major=4),
    "io_big_endian.npy": npy(npy_dict(descr=">f4"), struct.pack(">2f", 1.0, 2.0)),
    "io_fortran_order.npy": npy(npy_dict(fortran="True", shape="(2, 2)"), f32(4)),
    "io_unknown_descr.npy": npy(npy_dict(descr="<c8"), f32(4)),
    "io_malformed_dict.npy": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f32(2)),
    "io_dict_missing_shape.npy": npy("{'descr': '<f4', 'fortran_order': False}", f32(2)),
    "io_negative_dim.npy": npy(npy_dict(shape="(-2,)"), f32(2)),
    "io_shape_overflow.npy": npy(npy_dict(shape="(4294967296, 4294967296)")),
    "io_truncated_data.npy": npy(npy_dict(shape="(2, 3)"), f32(5)),
    "io_bool_bytes.npy": npy(npy_dict(descr="|b1"), b"\x01\x05"),
}


def main():
    for name, data in CASES.items():
        assert len(data) < 2048, name
        with open(os.path.join(HERE, name), "wb") as out:
            out.write(data)
    print("wrote %d files to %s" % (len(CASES), HERE))


if __name__ == "__main__":
    main()
