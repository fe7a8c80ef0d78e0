"""devicewatch: a live terminal profiler that shows where deep-learning time goes."""

__version__ = "0.1.0"
