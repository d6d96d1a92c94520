"""The benchmarks of st-infocse: scripts run from the repository root as ``python -m benchmarks.<name>``, their shared
harness, experiment runner and step timer. Not part of the wheel."""
