#!/usr/bin/python3
"""Dev-only cross-check of exported ONNX files with the reference checker.

    /usr/bin/python3 scripts/tools/check-onnx.py model.onnx [more.onnx ...]

Runs onnx.checker.check_model(model, full_check=True) (structure, operator schemas, and strict
shape inference) on each file and prints one line per file: OK with IR version, opsets and node
count, or FAIL with the checker's message. Exits 1 if any file fails. Needs the `onnx` Python
package (Debian: python3-onnx; 1.12 was used). dmlkit's tests and CI never run this.
"""
import sys

import onnx


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opsets = ", ".join(f"{o.domain or 'ai.onnx'}={o.version}" for o in model.opset_import)
    return f"IR {model.ir_version}, opsets {opsets}, {len(model.graph.node)} nodes"


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        try:
            print(f"OK    {path}: {check(path)} (onnx {onnx.__version__})")
        except Exception as err:  # the checker raises several exception types
            failed += 1
            print(f"FAIL  {path}: {type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
