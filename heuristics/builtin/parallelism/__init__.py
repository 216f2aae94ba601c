"""Time and parallelism: skewed stages and groups, task sizes, busy executors, shuffle waits."""
