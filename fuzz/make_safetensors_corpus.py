#!/usr/bin/env python3
"""Writes the seed corpus fuzz/corpus/safetensors_header/ (a few tiny valid and invalid files).

Run from the repository root: python3 fuzz/make_safetensors_corpus.py
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors_header")
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8, "U64": 8,
         "F16": 2, "BF16": 2, "F32": 4, "F64": 8, "F8_E4M3": 1, "F8_E8M0": 1}


def raw(header: bytes, data: bytes = b"", length=None) -> bytes:
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def build(tensors, metadata=None) -> bytes:
    """tensors: list of (name, dtype, shape); data is a counting byte pattern."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + n]}
        data += bytes(i % 251 for i in range(n))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return raw(text, data)


SEEDS = {
    "valid_two_tensors": build([("a.weight", "BF16", [2, 3]), ("a.scale", "F8_E8M0", [2, 1])],
                               {"format": "pt"}),
    "valid_release_dtypes": build([("w", "F8_E4M3", [4, 8]), ("s", "F8_E8M0", [4, 1]),
                                   ("e", "I8", [4, 4]), ("n", "BF16", [8]), ("f", "F32", [3]),
                                   ("i", "I32", [2]), ("l", "I64", [1])]),
    "valid_every_dtype": build([(f"t.{d}", d, [2]) for d in SIZES]),
    "valid_empty_and_scalar": build([("z", "F32", [0, 5]), ("s", "I64", []), ("b", "BOOL", [1])]),
    "valid_empty_header": raw(b"{}      "),
    "valid_metadata_only": raw(b'{"__metadata__":{"format":"pt","k":"v"}}'),
    "bad_overlap": raw(b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
                       b'"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}', bytes(8)),
    "bad_duplicate": raw(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                         b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', bytes(2)),
    "bad_dtype": raw(b'{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}', bytes(1)),
    "bad_size": raw(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', bytes(4)),
    "bad_out_of_range": raw(b'{"a":{"dtype":"U8","shape":[9],"data_offsets":[0,9]}}', bytes(4)),
    "bad_overflow": raw(b'{"a":{"dtype":"F32","shape":[4294967296,4294967296],'
                        b'"data_offsets":[0,0]}}'),
    "bad_negative": raw(b'{"a":{"dtype":"U8","shape":[-1],"data_offsets":[1,0]}}'),
    "bad_absurd_length": raw(b"{}", length=1 << 40),
    "bad_truncated_length": raw(b"{}", length=100),
    "bad_short": b"\x02\x00\x00",
    "bad_not_object": raw(b"[1,2,3]"),
    "bad_json": raw(b'{"a":{"dtype":"U8",,}}'),
    "bad_metadata": raw(b'{"__metadata__":{"format":1}}'),
    "bad_deep": raw(b"[" * 300 + b"]" * 300),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds, {sum(len(d) for d in SEEDS.values())} bytes in {OUT}")
