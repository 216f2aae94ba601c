"""Resource accounting: what an application was given and used, its waits, the fleet's day summary."""
