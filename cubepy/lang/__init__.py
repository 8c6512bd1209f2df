"""The names a kernel author writes: builtins, Comptime, static_range, @cube.func."""
