"""English formats (``teamclaw.formats``)."""

MONTH_DAY_TIME_FORMAT = "M j, H:i"  # Dec 5, 20:47
MONTH_DAY_SECONDS_FORMAT = "M j, H:i:s"  # Dec 5, 20:47:13
