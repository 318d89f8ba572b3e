"""The benchmark suite: python -m specdec bench. Grid, lanes, meters, statistics, report, figures."""
