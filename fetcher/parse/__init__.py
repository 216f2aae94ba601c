"""History Server JSON -> plain row dicts, one per table (pure: no I/O, no database).

Parsing is tolerant the way an SHS client must be: unknown fields are ignored, fields that older
Spark versions lack get defaults, and only a body of the wrong shape (say, an object where a list
belongs) is an error. Secrets in properties are redacted here, before anything is stored.
"""

from fetcher.parse.app import (
    AppBundle,
    parse_environment,
    parse_executors,
    parse_jobs,
    redact_properties,
)
from fetcher.parse.entry import AppEntry, parse_app_entry, parse_listing
from fetcher.parse.fields import ParseError, parse_time_ms
from fetcher.parse.stages import (
    flatten_distribution,
    parse_stage_executors,
    parse_stage_failed_tasks,
    parse_stages,
    parse_task,
    parse_task_list,
    parse_task_summary,
)

__all__ = [
    "AppBundle",
    "AppEntry",
    "ParseError",
    "flatten_distribution",
    "parse_app_entry",
    "parse_environment",
    "parse_executors",
    "parse_jobs",
    "parse_listing",
    "parse_stage_executors",
    "parse_stage_failed_tasks",
    "parse_stages",
    "parse_task",
    "parse_task_list",
    "parse_task_summary",
    "parse_time_ms",
    "redact_properties",
]
