#!/usr/bin/env python3
"""Writes testdata/pycases.json: reference results from Python itself for
random strings, to check the Go scanners, encoder and decoder against.
  split:  regex.findall of the GPT-4 and GPT-2 patterns (regex module)
  encode: encode_ordinary with ../shared/models/course/tokenizer.json,
          by a plain re-implementation of the course's merge loop
  decode: bytes.decode("utf-8", errors="replace") of random byte strings
Run: python3 gen_pycases.py ../../../../shared/models/course/tokenizer.json > testdata/pycases.json
"""
import json
import random
import sys

import regex

GPT4 = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

PIECES = [
    "a", "Z", "hello", "World", "The", " ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ",
    "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\u200b",
    "'", "'s", "'S", "'\u017f", "'ll", "'LL", "'lL", "'ve", "'VE", "'re", "'Re", "'d", "'M", "'t", "'x",
    "0", "7", "12", "123", "1234", "\u0663", "\u00b2", "\u216b", "\uff11",
    ".", ",", "!", "?", "...", "--", "\"", "(", ")", "#", "$", "%", "@", "_", "\\", "|", "<", ">",
    "<|endoftext|>", "e\u0301", "\u0301", "\u0915\u094d\u0937", "caf\u00e9", "\u00df", "\u212a",
    "\u65e5\u672c", "\u8a9e", "\u30c6\u30ad", "\ud55c", "\U0001F600", "\U0001F431\U0001F389",
    "\u2764\ufe0f", "\U0001F44D\U0001F3FD", "\ufffd", "\u00a9", "\u20ac",
    "\u088f", "\U000105c0", "\u0c5c", "\ua7cb", "\U00031350", "\u0600", "\u05d0\u05d1",
]


def rand_text(rng):
    n = rng.randint(0, 24)
    return "".join(rng.choice(PIECES) for _ in range(n))


def rand_bytes(rng):
    pool = [0x41, 0x20, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
            0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
    return bytes(rng.choice(pool) for _ in range(rng.randint(0, 12)))


def encoder(spec):
    ranks = {tuple(p): r for r, p in enumerate(spec["merges"])}
    pat = regex.compile(spec["pattern"])

    def chunk_ids(chunk):
        ids = list(chunk.encode("utf-8"))
        while len(ids) > 1:
            pairs = [(ranks[p], p) for p in zip(ids, ids[1:]) if p in ranks]
            if not pairs:
                break
            r, (a, b) = min(pairs)
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
                    out.append(256 + r)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids

    return lambda text: [t for c in pat.findall(text) for t in chunk_ids(c)]


def main():
    rng = random.Random(20261129)
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    enc = encoder(spec)
    g4, g2 = regex.compile(GPT4), regex.compile(GPT2)
    texts = [rand_text(rng) for _ in range(300)]
    cases = [{"text": t, "gpt4": g4.findall(t), "gpt2": g2.findall(t), "ids": enc(t)} for t in texts]
    dec = []
    for _ in range(300):
        b = rand_bytes(rng)
        dec.append({"hex": b.hex(), "text": b.decode("utf-8", errors="replace")})
    json.dump({"regex_version": regex.__version__, "split": cases, "decode": dec}, sys.stdout,
              ensure_ascii=True, indent=0)
    print()


main()
