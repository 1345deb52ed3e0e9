"""Statistics: pure functions, DataFrames or arrays in, results out; no I/O."""
