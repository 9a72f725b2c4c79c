"""core.files' small helpers."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from tfbuild.core.files import utc_stamp


def test_a_stamp_is_the_time_in_utc_sortable() -> None:
    assert utc_stamp(datetime(2026, 11, 23, 9, 15, 2, tzinfo=timezone.utc)) == "20261123-091502"
    assert re.fullmatch(r"\d{8}-\d{6}", utc_stamp())
