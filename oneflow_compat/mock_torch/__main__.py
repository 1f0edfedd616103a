"""`eval $(python3 -m oneflow.mock_torch [enable|disable])`, or `eval $(oneflow-mock-torch [enable|disable])` (the
console script OneFlow 0.9.0's setup.py installs): prints the shell line that puts this package's `torch` on
PYTHONPATH (enable, the default) or takes it off."""
import argparse
import os
import sys

from oneflow_compat.mock_torch import _shim_path


def main(argv=None):
    script = os.path.basename(sys.argv[0])
    parser = argparse.ArgumentParser(prog="python3 -m oneflow.mock_torch" if script in ("__main__.py", "-m", "")
                                     else script)
    parser.add_argument("mock", choices=["enable", "disable"], nargs="?", default="enable",
                        help="enable/disable mocking 'import torch', default is enable")
    args = parser.parse_args(argv)
    shim = _shim_path()
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p and p != shim]
    if args.mock == "enable":
        paths.insert(0, shim)
    print("export PYTHONPATH=" + ":".join(paths))


if __name__ == "__main__":
    main()
