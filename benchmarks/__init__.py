"""The project's benchmarks: `python -m benchmarks` runs them all and prints one table (see harness.py)."""
