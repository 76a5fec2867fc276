"""Write a benchmark's results as JSON under benchmarks/results/, with when, where and how it ran."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path


def write_results(
    name: str, config: dict, report: dict, checks: dict, device: str, command: str | None = None
) -> Path:
    """Save ``benchmarks/results/NAME.json`` and return its path; ``command``: how it ran, if not plainly."""
    out = Path(__file__).resolve().parent / "results" / f"{name}.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": name,
                "config": config,
                "report": report,
                "checks": checks,
                "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
                "python": platform.python_version(),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, {device}",
                "command": command or f"python benchmarks/{name}.py",
            },
            indent=2,
            default=float,
        )
        + "\n"
    )
    print(f"wrote {out}")
    return out
