"""Write a benchmark's results as JSON under benchmarks/results/, with when, where and how it ran."""

from __future__ import annotations

import json
import os
import platform
import subprocess
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


# Comparing with an older commit, measured side by side on one machine (machines here differ by 2x from
# day to day): ``--against REV`` runs the benchmark at REV first; ``--before FILE`` takes REV's figures
# from the "against" part of a results file that such a run wrote just before.
ROOT = Path(__file__).resolve().parents[1]


def add_comparison_arguments(parser, what: str) -> None:
    """``--against REV`` or ``--before FILE`` (not both); ``what``: the work done at REV, for the help."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--against", metavar="REV", help=f"first {what} as it was at commit REV, on this machine"
    )
    group.add_argument(
        "--before",
        metavar="FILE",
        help="take the older commit's figures from the 'against' part of a results file written by a run "
        "with --against made just before (instead of measuring that commit again)",
    )


def short_commit(revision: str) -> str:
    """``revision``'s short commit hash; exits with a message if this checkout has no such commit."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "--verify", "--quiet", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise SystemExit(f"no commit {revision!r} in {ROOT} (try `git log --oneline` for one)")
    return found.stdout.strip()


def read_before(path: str, needs: tuple[str, ...]) -> dict:
    """The 'against' figures of the results file at ``path``; exits with a message if it has none."""
    try:
        before = json.loads(Path(path).read_text(encoding="utf-8"))["report"]["against"]
        missing = [key for key in needs if key not in before]
    except OSError as error:
        raise SystemExit(f"--before {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError):
        raise SystemExit(
            f"--before {path}: not a results file with an older commit's figures; write one with --against"
        ) from None
    if missing:
        raise SystemExit(f"--before {path}: its 'against' figures lack {', '.join(missing)}")
    return before


def comparison_command(script: str, args) -> str:
    """The command that reproduces this run, comparison flags included."""
    command = f"python benchmarks/{script}.py"
    if args.against:
        return command + f" --against {args.against}"
    return command + (f" --before {args.before}" if args.before else "")
