"""Failures: jobs, stage attempts and task attempts that failed, and why."""
