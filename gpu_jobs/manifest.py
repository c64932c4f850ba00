"""The environment manifest of a GPU job: what hardware and software the results come from.

Every field is measured, never guessed: from ``nvidia-smi`` when it is on PATH, and from torch as
imported by the suite's own interpreter (in a subprocess, so the runner itself never imports
torch or initialises CUDA). A field that cannot be measured is ``{"value": null, "unavailable":
"<reason>"}``; a measured one is ``{"value": ..., "source": "nvidia-smi" | "torch" | "python"}``.
Standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FIELDS", "collect_manifest", "hardware_line"]

SCHEMA_VERSION = 1
FIELDS = ("gpu_model", "gpu_count", "gpu_memory_mib", "driver", "cuda_driver", "cuda_runtime", "torch",
          "cuda_available", "python", "platform")  # fmt: skip

_TORCH_PROBE = r"""
import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
except Exception as exc:
    out["torch_error"] = f"{type(exc).__name__}: {exc}"
else:
    out["torch"] = torch.__version__
    out["cuda_runtime"] = torch.version.cuda
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
        out["gpu_count"] = torch.cuda.device_count() if out["cuda_available"] else 0
        out["gpu_names"] = [torch.cuda.get_device_name(i) for i in range(out["gpu_count"])]
        out["gpu_memory_mib"] = [
            round(torch.cuda.get_device_properties(i).total_memory / 2**20) for i in range(out["gpu_count"])
        ]
    except Exception as exc:
        out["cuda_error"] = f"{type(exc).__name__}: {exc}"
print("REVERTBOT-PROBE " + json.dumps(out))
"""


def _ok(value: Any, source: str) -> dict[str, Any]:
    return {"value": value, "source": source}


def _missing(reason: str) -> dict[str, Any]:
    return {"value": None, "unavailable": reason}


def _nvidia_smi(env: Mapping[str, str], timeout: float) -> tuple[list[list[str]], str, str]:
    """(rows of name, driver, memory MiB; the driver's CUDA version; an error or '')."""
    exe = shutil.which("nvidia-smi", path=env.get("PATH"))
    if exe is None:
        return [], "", "nvidia-smi is not on PATH"
    try:
        query = subprocess.run(
            [exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=timeout, env=dict(env), check=False,
        )  # fmt: skip
        header = subprocess.run([exe], capture_output=True, text=True, timeout=timeout, env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], "", f"nvidia-smi failed: {exc}"
    if query.returncode != 0:
        detail = (query.stdout + query.stderr).strip().splitlines()
        return [], "", f"nvidia-smi exited with {query.returncode}: {detail[0] if detail else 'no output'}"
    rows = [[c.strip() for c in line.split(",")] for line in query.stdout.splitlines() if line.strip()]
    cuda = ""
    for token in header.stdout.split("CUDA Version:")[1:2]:
        cuda = token.split()[0].strip("|") if token.split() else ""
    return rows, cuda, ""


def _torch_probe(python: str, env: Mapping[str, str], timeout: float,
                 command: Callable[[list[str]], list[str]] | None = None,
                 cwd: str | None = None) -> tuple[dict[str, Any], str]:  # fmt: skip
    argv = [python, "-c", _TORCH_PROBE]
    try:
        proc = subprocess.run(command(argv) if command else argv, capture_output=True, text=True,
                              timeout=timeout, env=dict(env), cwd=cwd, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"the torch probe failed: {exc}"
    for line in proc.stdout.splitlines():
        if line.startswith("REVERTBOT-PROBE "):
            data: dict[str, Any] = json.loads(line[len("REVERTBOT-PROBE "):])
            return data, ""
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {}, f"the torch probe exited with {proc.returncode}: {tail}"


def collect_manifest(python: str | None = None, env: Mapping[str, str] | None = None,
                     timeout: float = 120.0, probe: Mapping[str, Any] | None = None,
                     probe_command: Callable[[list[str]], list[str]] | None = None,
                     probe_cwd: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Measure the environment as the suite will see it (``python`` and ``env`` of the suite).

    ``probe`` is what the suite's own interpreter reported (the pytest plugin writes it); without
    it a separate interpreter is started to import torch and ask: ``probe_command`` turns its argv
    into the one to run (``gpu run --suite-user``: as the suite's user, with the suite's environment),
    in ``probe_cwd``.
    """
    python = python or sys.executable
    env = dict(os.environ if env is None else env)
    rows, cuda_driver, smi_error = _nvidia_smi(env, timeout)
    if probe is not None:
        probe, probe_error = dict(probe), ""
    else:
        probe, probe_error = _torch_probe(python, env, timeout, probe_command, probe_cwd)
    torch_error = probe_error or probe.get("torch_error", "")
    torch_why = f"torch is not importable by {python}: {torch_error}" if torch_error else ""
    cuda_why = probe.get("cuda_error", "")
    fields: dict[str, Any] = {}

    names: list[str] = probe.get("gpu_names") or []
    # What the suite's interpreter says is counted only where nvidia-smi (run here, not by the
    # suite) lists a GPU too: the suite's own code can write the probe.
    unconfirmed = bool(names) and not rows
    if names and not unconfirmed:
        fields["gpu_model"] = _ok(sorted(set(names)) if len(set(names)) > 1 else names[0], "torch")
        fields["gpu_count"] = _ok(len(names), "torch")
        fields["gpu_memory_mib"] = _ok(probe.get("gpu_memory_mib", [None])[0], "torch")
    elif rows:
        models = sorted({r[0] for r in rows})
        fields["gpu_model"] = _ok(models if len(models) > 1 else models[0], "nvidia-smi")
        fields["gpu_count"] = _ok(len(rows), "nvidia-smi")
        fields["gpu_memory_mib"] = _ok(_int(rows[0][2]) if len(rows[0]) > 2 else None, "nvidia-smi")
    else:
        why = "; ".join(w for w in (smi_error, torch_why or cuda_why or
                                    ("torch sees no CUDA device" if probe else ""),
                                    "the suite's torch names a GPU that nvidia-smi does not list" if unconfirmed
                                    else "") if w)  # fmt: skip
        for name in ("gpu_model", "gpu_count", "gpu_memory_mib"):
            fields[name] = _missing(why or "no GPU found")
    fields["driver"] = _ok(rows[0][1], "nvidia-smi") if rows and len(rows[0]) > 1 else _missing(
        smi_error or "nvidia-smi lists no GPU")
    fields["cuda_driver"] = _ok(cuda_driver, "nvidia-smi") if cuda_driver else _missing(
        smi_error or "nvidia-smi does not print a CUDA version")
    if torch_why:
        for name in ("cuda_runtime", "torch", "cuda_available"):
            fields[name] = _missing(torch_why)
    else:
        runtime = probe.get("cuda_runtime")
        fields["cuda_runtime"] = _ok(runtime, "torch") if runtime else _missing(
            f"torch {probe.get('torch')} is a build without CUDA")
        fields["torch"] = _ok(probe.get("torch"), "torch")
        fields["cuda_available"] = _ok(probe.get("cuda_available"), "torch") if "cuda_available" in probe \
            else _missing(cuda_why or "unknown")
    fields["python"] = _ok(probe["python"], "python") if "python" in probe else _missing(
        probe_error or "the interpreter did not answer")
    fields["platform"] = _ok(f"{platform.system()} {platform.machine()}", "python")
    return {
        "schema": SCHEMA_VERSION,
        "python_executable": python,
        "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"),
        "runner_name": env.get("RUNNER_NAME"),
        "fields": fields,
    }


def _int(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None


def value(manifest: Mapping[str, Any], name: str) -> Any:
    """A field's value, or None when it was unavailable."""
    field = manifest.get("fields", {}).get(name) or {}
    return field.get("value")


def hardware_line(manifest: Mapping[str, Any]) -> str:
    """One human line: ``1× NVIDIA H200 (driver 570.86, CUDA 12.8, torch 2.6.0, Python 3.11.9)``."""
    model, count = value(manifest, "gpu_model"), value(manifest, "gpu_count")
    if isinstance(model, list):
        model = " + ".join(str(m) for m in model)
    parts = []
    for label, name in (("driver", "driver"), ("CUDA", "cuda_runtime"), ("torch", "torch"), ("Python", "python")):
        v = value(manifest, name)
        if v is not None:
            parts.append(f"{label} {v}")
    details = f" ({', '.join(parts)})" if parts else ""
    if model and count:
        return f"{count}× {model}{details}"
    why = (manifest.get("fields", {}).get("gpu_model") or {}).get("unavailable", "unknown")
    return f"no GPU ({why}){details}"
