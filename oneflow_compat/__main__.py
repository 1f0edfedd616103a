"""`python -m oneflow_compat` (console script `oneflow-compat`):

    python -m oneflow_compat script.py [args]           run a legacy script with `import oneflow` -> oneflow_compat
    python -m oneflow_compat explain script.py [args]   print each job's placements, SBP and boxing bytes; exit
    python -m oneflow_compat validate [op_type ...]     check every op's declared SBP signatures on 2-4 devices

A script literally named `explain` or `validate` runs as `./explain`.
"""
import os
import runpy
import sys

USAGE = __doc__.strip()


def run_script(script, args):
    """Runs a legacy script as __main__ with the `oneflow` alias forced (even where a real OneFlow exists)."""
    import oneflow_compat_alias

    if not os.path.isfile(script):
        print("oneflow_compat: no such script: %s" % script, file=sys.stderr)
        return 2
    oneflow_compat_alias.install_override()
    sys.argv = [script] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python script.py` would
    runpy.run_path(script, run_name="__main__")
    return 0


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = args[0], args[1:]
    if command in ("-h", "--help"):
        print(USAGE)
        return 0
    if command == "explain":
        from oneflow_compat.tools import explain

        return explain.main(rest)
    if command == "validate":
        from oneflow_compat.tools import validate

        return validate.main(rest)
    return run_script(command, rest)


if __name__ == "__main__":
    sys.exit(main())
