"""Task end reasons as the SHS prints them, and the user accumulators it keeps."""

from __future__ import annotations

import json
from typing import Any


def _block_manager_str(bm: dict[str, Any] | None) -> str:
    if not bm:
        return "null"
    topo = bm.get("Topology Info")
    topo_s = "None" if topo is None else f"Some({topo})"
    return f"BlockManagerId({bm.get('Executor ID')}, {bm.get('Host')}, {bm.get('Port')}, {topo_s})"


def _exception_string(cls: str, desc: str | None, trace: list[dict[str, Any]]) -> str:
    desc_s = "" if desc is None else desc
    lines = "".join(
        f"\tat {t.get('Declaring Class')}.{t.get('Method Name')}"
        f"({t.get('File Name')}:{t.get('Line Number')})\n"
        for t in trace or []
    )
    return f"{cls}: {desc_s}\n{lines}"


def error_string(reason: dict[str, Any]) -> str | None:
    """``TaskEndReason.toErrorString`` (and ``TaskKilled.reason``) for the task's errorMessage."""
    r = reason.get("Reason")
    if r == "Success":
        return None
    if r == "TaskKilled":
        return reason.get("Kill Reason", "unknown reason")
    if r == "ExceptionFailure":
        full = reason.get("Full Stack Trace")
        if full is not None:
            return full
        return _exception_string(
            reason.get("Class Name", ""), reason.get("Description"), reason.get("Stack Trace") or []
        )
    if r == "FetchFailed":
        map_index = reason.get("Map Index", -(2**31))
        mi = "Unknown" if map_index == -(2**31) else str(map_index)
        return (
            f"FetchFailed({_block_manager_str(reason.get('Block Manager Address'))}, "
            f"shuffleId={reason.get('Shuffle ID')}, mapIndex={mi}, mapId={reason.get('Map ID')}, "
            f"reduceId={reason.get('Reduce ID')}, message=\n{reason.get('Message')}\n)"
        )
    if r == "ExecutorLostFailure":
        how = (
            "caused by one of the running tasks"
            if reason.get("Exit Caused By App", True)
            else "unrelated to the running tasks"
        )
        loss = reason.get("Loss Reason")
        return f"ExecutorLostFailure (executor {reason.get('Executor ID')} exited {how})" + (
            f" Reason: {loss}" if loss is not None else ""
        )
    if r == "TaskCommitDenied":
        return (
            "TaskCommitDenied (Driver denied task commit) for job: "
            f"{reason.get('Job ID', -1)}, partition: {reason.get('Partition ID', -1)}, "
            f"attemptNumber: {reason.get('Attempt Number', -1)}"
        )
    if r == "TaskResultLost":
        return "TaskResultLost (result lost from block manager)"
    if r == "Resubmitted":
        return "Resubmitted (resubmitted due to lost executor)"
    return "UnknownReason"


def user_accumulables(accs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``LiveEntityHelpers.newAccumulatorInfos``: drop internal and SQL accumulators."""
    out = []
    for a in accs or []:
        if a.get("Internal", False) or a.get("Metadata") == "sql":
            continue
        item: dict[str, Any] = {"id": a.get("ID")}
        if a.get("Name") is not None:
            item["name"] = a["Name"]
        if "Update" in a and a["Update"] is not None:
            item["update"] = _accum_text(a["Update"])
        if a.get("Value") is not None:
            item["value"] = _accum_text(a["Value"])
        out.append(item)
    return out


def _accum_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list | dict):
        return json.dumps(v)
    return str(v)
