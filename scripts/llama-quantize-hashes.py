#!/usr/bin/env python3
"""Regenerate entries of models/convert/testdata/llama-quantize.json.

usage: scripts/llama-quantize-hashes.py LIBDIR SOURCE_NAME SOURCE.gguf MIX...

Quantises SOURCE.gguf with llama.cpp's own llama_model_quantize (libllama
from LIBDIR, node-llama-cpp 3.21.1's bins/linux-x64 under
~/.cache/chat-bench/llamacpp/node_modules/@node-llama-cpp/linux-x64, installed
by ../shared/bench/llamacpp.sh --install) to each MIX with allow_requantize,
1 thread and no imatrix, and stores per tensor its ggml type name and the
first 8 bytes (hex) of the sha256 of its data under
sha256_first8[SOURCE_NAME][MIX]. The sources TestMatchesLlamaQuantize reads:
stories260K = ../shared/models/stories260K/stories260K.gguf, student-f32 =
`chat convert ../shared/models/course/student.pt OUT --type f32`.
Standard library only (ctypes, a minimal GGUF reader).
"""
import ctypes
import hashlib
import json
import os
import struct
import sys
import tempfile

# llama_ftype of each mix name convert's --type takes (include/llama.h).
FTYPES = {"f16": 1, "q4_0": 2, "q8_0": 7, "q5_0": 8, "q2_k": 10, "q3_k_m": 12,
          "q4_k_s": 14, "q4_k_m": 15, "q5_k_s": 16, "q5_k_m": 17, "q6_k": 18,
          "iq4_nl": 25, "iq4_xs": 30}

# ggml type: name, block size, block bytes (ggml-common.h), for the types
# these mixes write.
TYPES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20),
         6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34),
         10: ("q2_k", 256, 84), 11: ("q3_k", 256, 110), 12: ("q4_k", 256, 144),
         13: ("q5_k", 256, 176), 14: ("q6_k", 256, 210), 20: ("iq4_nl", 32, 18),
         23: ("iq4_xs", 256, 136), 30: ("bf16", 1, 2)}


class QuantizeParams(ctypes.Structure):
    # llama_model_quantize_params of llama.cpp 80fb11a (include/llama.h).
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int),
                ("output_tensor_type", ctypes.c_int), ("token_embedding_type", ctypes.c_int),
                ("allow_requantize", ctypes.c_bool), ("quantize_output_tensor", ctypes.c_bool),
                ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool),
                ("imatrix", ctypes.c_void_p), ("kv_overrides", ctypes.c_void_p),
                ("tt_overrides", ctypes.c_void_p), ("prune_layers", ctypes.c_void_p),
                ("max_buf_size", ctypes.c_size_t)]


def tensor_hashes(path):
    """{name: [type, sha256 first 8 bytes hex]} of every tensor of a GGUF file."""
    b = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = b[pos:pos + n].decode()
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    assert b[:4] == b"GGUF", path
    pos = 8
    n_tensors, n_kv = take("Q"), take("Q")
    align = 32
    for _ in range(n_kv):
        key, t = string(), take("I")
        v = value(t)
        if key == "general.alignment":
            align = v
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    start = (pos + align - 1) // align * align
    out = {}
    for name, dims, t, off in infos:
        tname, bs, bb = TYPES[t]
        n = 1
        for d in dims:
            n *= d
        data = b[start + off:start + off + n // bs * bb]
        out[name] = [tname, hashlib.sha256(data).hexdigest()[:16]]
    return out


def main():
    libdir, source, src_path, mixes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    lib = ctypes.CDLL(os.path.join(libdir, "libllama.v0.4.0.so"))
    lib.llama_backend_init()
    lib.llama_model_quantize_default_params.restype = QuantizeParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    ref = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "convert", "testdata", "llama-quantize.json")
    d = json.load(open(ref))
    with tempfile.TemporaryDirectory() as tmp:
        for mix in mixes:
            p = lib.llama_model_quantize_default_params()
            p.nthread, p.ftype, p.allow_requantize = 1, FTYPES[mix], True
            out = os.path.join(tmp, mix + ".gguf")
            if lib.llama_model_quantize(src_path.encode(), out.encode(), ctypes.byref(p)) != 0:
                sys.exit(f"llama_model_quantize failed for {mix}")
            d["sha256_first8"].setdefault(source, {})[mix] = tensor_hashes(out)
    with open(ref, "w") as f:
        f.write(json.dumps(d, separators=(",", ":"), sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
