"""The forecasts kept for ``tfbuild smoke``: one file per TensorFlow release and target, written by
``tfbuild forecast`` and read beside what smoke measures of a wheel built for that target.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tfbuild.core import serial
from tfbuild.core.cache import FORECASTS, cache_root
from tfbuild.core.files import write_text
from tfbuild.measure.forecast_report import SCHEMA, Forecast


def _forecast_file(tensorflow: str, target: str) -> Path:
    release = re.match(r"\d+\.\d+\.\d+", tensorflow)
    version = release.group(0) if release else "unknown"
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", target)
    return cache_root() / FORECASTS / f"tf-{version}-{safe}.json"


def save_forecast(forecast: Forecast) -> Path:
    """Keep the forecast where ``tfbuild smoke`` finds it for a wheel of that version and target."""
    path = _forecast_file(forecast.tensorflow, forecast.target)
    write_text(path, json.dumps(serial.to_data(forecast), indent=2) + "\n")
    return path


def saved_forecast(tensorflow: str | None, built_for: str | None) -> dict[str, Any] | None:
    """The forecast kept for a wheel of this version, built for this target (the receipt's
    ``built_for``: "icelake (-march=...)"); None when there is none or it does not read."""
    if not tensorflow or not built_for:
        return None
    path = _forecast_file(tensorflow, built_for.split(" ")[0])
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    return data | {"saved": str(path)}
