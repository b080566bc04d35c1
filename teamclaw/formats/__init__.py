"""TeamClaw's own date formats per language (Django's ``FORMAT_MODULE_PATH``), read with
``django.utils.formats.get_format`` or the ``date`` filter by name, after which Django's own
formats for the language apply (issue 32: dates in the locale's format).

``MONTH_DAY_TIME_FORMAT``: a day of the year and a time, for a deadline or an event within
days (``Dec 5, 20:47`` / ``12月5日 20:47``); the zone's name follows it where it is shown."""
