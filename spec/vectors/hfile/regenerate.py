"""Recipe of the HFile vectors (spec/mdt.md §1): ``python spec/vectors/hfile/regenerate.py``.

Each case is a small HFile written by morlog's encoder in one of the two writer styles that
reproduce Hudi's bytes; ``case.json`` lists its cells and file info so that a reader can be
checked against the hex independently of morlog's encoder (tests/test_hfile.py).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from morlog.logformat.hfile.codec import HBASE, HUDI_NATIVE, Codec, decode_hfile, encode_hfile

HERE = Path(__file__).resolve().parent
CELLS = [(b"__all_partitions__", b"\x00\x02"), (b"p=1", b"\x04\x06abc")]
CASES = {
    "native-none-two-cells": ("hudi-native", HUDI_NATIVE, Codec.NONE, "§1.2-1.6",
                              "Hudi 1.1 writer layout, codec NONE: every byte readable"),
    "hbase-gz-crc32c-two-cells": ("hbase", HBASE, Codec.GZ, "§1.7",
                                  "HBase 2.4 layout as Hudi 1.0 writes it: GZ, CRC-32C"),
}


def main() -> None:
    for name, (style_name, style, codec, section, what) in CASES.items():
        blob = encode_hfile([k for k, _ in CELLS], [v for _, v in CELLS], codec=codec,
                            style=style, create_time_ms=0)
        hf = decode_hfile(blob)
        case = {
            "description": f"Two cells, {what}.",
            "spec": f"spec/mdt.md {section}",
            "style": style_name,
            "codec": codec.name,
            "create_time_ms": 0,
            "cells": [[k.hex(), v.hex()] for k, v in CELLS],
            "file_info": {k.decode(): v.hex() for k, v in hf.file_info.items()},
        }
        out = HERE / name
        out.mkdir(exist_ok=True)
        (out / "case.json").write_text(json.dumps(case, indent=2) + "\n")
        (out / "input.hex").write_text("\n".join(textwrap.wrap(blob.hex(), 64)) + "\n")
        print("wrote", out.relative_to(HERE.parent.parent.parent))


if __name__ == "__main__":
    main()
