#!/usr/bin/env python3
"""Seed the CEL fuzz corpus: every conformance vector's expression, with the
mode byte fuzz_cel.c expects (bit 0: device selector, bit 1: NewExpressions,
bit 2: consumable capacity, bit 3: list attributes, bit 4: any result type,
bit 5: declare x), plus any hand-written seeds in an extra directory.

usage: seed_cel.py VECTOR_DIR OUT_DIR [EXTRA_SEED_DIR]
"""
import hashlib
import json
import os
import shutil
import sys


def main():
    vec_dir, out_dir = sys.argv[1], sys.argv[2]
    extra = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(out_dir, exist_ok=True)
    n = 0
    for name in sorted(os.listdir(vec_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(vec_dir, name)) as f:
            v = json.load(f)
        mode = 0
        if "device" in v:
            mode |= 1 | 16
        if v.get("envType") == "NewExpressions":
            mode |= 2
        feats = v.get("features") or {}
        if feats.get("ConsumableCapacity", True):
            mode |= 4
        if feats.get("ListTypeAttributes", False):
            mode |= 8
        if "bindings" in v:
            mode |= 32
        data = bytes([mode]) + v["expr"].encode("utf-8")
        digest = hashlib.sha1(data).hexdigest()
        with open(os.path.join(out_dir, digest), "wb") as f:
            f.write(data)
        n += 1
    if extra and os.path.isdir(extra):
        for name in sorted(os.listdir(extra)):
            shutil.copy(os.path.join(extra, name), os.path.join(out_dir, name))
            n += 1
    print(f"seeded {n} inputs into {out_dir}")


if __name__ == "__main__":
    main()
