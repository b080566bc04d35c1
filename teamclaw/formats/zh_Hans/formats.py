"""Simplified Chinese formats (``teamclaw.formats``)."""

MONTH_DAY_TIME_FORMAT = "n月j日 H:i"  # 12月5日 20:47
