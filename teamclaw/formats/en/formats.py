"""English formats (``teamclaw.formats``)."""

MONTH_DAY_TIME_FORMAT = "M j, H:i"  # Dec 5, 20:47
