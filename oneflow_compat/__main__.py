"""`oneflow-compat` (also `python -m oneflow_compat`): one command line with subcommands.

    oneflow-compat run script.py [args]        run a OneFlow script with `import oneflow` -> oneflow_compat
    oneflow-compat script.py [args]            the same (the form the README has always shown)
    oneflow-compat explain [--ranks N] [--svg FILE | --png FILE] script.py [args]
                                               each job's placements, SBP and boxing bytes, without training
    oneflow-compat validate [--failures-only] [op_type ...]
                                               every op's declared SBP signatures on 2-4 simulated devices
    oneflow-compat launch -n N script.py [args]
                                               the script on N MPI ranks (python -m oneflow_compat.tools.launch)
    oneflow-compat gpu-check [--stage ...]     the GPU checks of a checkout, in stages
    oneflow-compat --version | --help | SUBCOMMAND --help

A first argument that is not a subcommand or an option is a script to run, so that `python -m oneflow_compat
script.py` keeps working; a script literally named like a subcommand runs as `./explain` or `run explain`.
The parsers are the tools' own (`tools/*.py: add_arguments`), so `python -m oneflow_compat.tools.launch` etc. take
the same options.
"""
import argparse
import os
import runpy
import sys

SUBCOMMANDS = ("run", "explain", "validate", "launch", "gpu-check")


def run_script(script, args):
    """Runs a script as __main__ with the `oneflow` alias forced (even where a real OneFlow exists)."""
    import oneflow_compat_alias

    if not os.path.isfile(script):
        print("oneflow-compat: no such script: %s" % script, file=sys.stderr)
        return 2
    oneflow_compat_alias.install_override()
    sys.argv = [script] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python script.py` would
    runpy.run_path(script, run_name="__main__")
    return 0


def version_text():
    import numpy

    from oneflow_compat.kernels import jit
    from oneflow_compat.version import ONEFLOW_APIS, __version__

    kernels = "compiled CPU kernels (numba %s)" % jit.numba.__version__ if jit.AVAILABLE else "numpy CPU kernels"
    return "oneflow-compat %s (OneFlow %s; Python %s, numpy %s, %s)" % (
        __version__, ", ".join("%s %s" % (name, versions) for name, versions in ONEFLOW_APIS),
        ".".join(map(str, sys.version_info[:3])), numpy.__version__, kernels)


class _VersionAction(argparse.Action):
    # computed only when asked (argparse's own "version" action wants the text when the parser is built)
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def build_parser():
    from oneflow_compat.tools import explain, gpu_check, launch, validate

    parser = argparse.ArgumentParser(
        prog="oneflow-compat",
        description="OneFlow's legacy (v0.3-0.4) and global-tensor (v0.5-0.9) Python APIs on numpy, CuPy and MPI.",
        epilog="`oneflow-compat script.py [args]` is `oneflow-compat run script.py [args]`. "
               "Run `oneflow-compat SUBCOMMAND --help` for a subcommand's options.")
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND")
    sub.required = True

    run = sub.add_parser("run", help="run a OneFlow script on oneflow_compat",
                         description="Run a script that says `import oneflow` on oneflow_compat, even where a real "
                                     "OneFlow is installed.")
    run.add_argument("script", help="the Python script")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    run.set_defaults(handler=lambda o: run_script(o.script, o.args))

    ex = sub.add_parser("explain", help="show what a program's plan places, lays out and communicates",
                        description=explain.DESCRIPTION)
    explain.add_arguments(ex)
    ex.set_defaults(handler=explain.run)

    va = sub.add_parser("validate", help="check every op's SBP signatures on simulated devices",
                        description=validate.DESCRIPTION)
    validate.add_arguments(va)
    va.set_defaults(handler=validate.run)

    la = sub.add_parser("launch", help="run a script on N MPI ranks", description=launch.DESCRIPTION)
    launch.add_arguments(la)
    la.set_defaults(handler=lambda o: launch.run(o, la))

    gc = sub.add_parser("gpu-check", help="run the GPU checks of a checkout in stages",
                        description=gpu_check.__doc__.splitlines()[0])
    gpu_check.add_arguments(gc)
    gc.set_defaults(handler=gpu_check.run)
    return parser


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] not in SUBCOMMANDS and not args[0].startswith("-"):
        args.insert(0, "run")  # `python -m oneflow_compat script.py args`
    parser = build_parser()
    if not args:
        parser.print_usage(sys.stderr)
        print("oneflow-compat: a subcommand or a script is required (see oneflow-compat --help)", file=sys.stderr)
        return 2
    options = parser.parse_args(args)
    return options.handler(options)


if __name__ == "__main__":
    sys.exit(main())
