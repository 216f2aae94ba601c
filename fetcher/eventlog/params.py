"""Query parameters of the REST paths answered from event logs, and the 404 / 400 they can end in."""

from __future__ import annotations

DEFAULT_QUANTILES = "0.0,0.25,0.5,0.75,1.0"
TASK_SUMMARY_QUANTILES = "0.05,0.25,0.5,0.75,0.95"


class NotFound(LookupError):
    """What the SHS answers with 404."""


class BadRequest(ValueError):
    """What the SHS answers with 400."""


def parse_quantiles(text: str) -> list[float]:
    try:
        qs = [float(x) for x in text.split(",")]
    except ValueError:
        raise BadRequest(
            f'Bad value for parameter "quantiles".  Expected a double, got "{text}"'
        ) from None
    return sorted(qs)
