"""Simplified Chinese formats (``teamclaw.formats``)."""

MONTH_DAY_TIME_FORMAT = "n月j日 H:i"  # 12月5日 20:47
MONTH_DAY_SECONDS_FORMAT = "n月j日 H:i:s"  # 12月5日 20:47:13
