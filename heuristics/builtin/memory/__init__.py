"""Memory and garbage collection: executors' and the driver's JVMs, and spill to disk."""
