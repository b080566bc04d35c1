// The operator's time zone (teamclaw/time_zones.py): store the browser's IANA zone name in
// the teamclaw_tz cookie, so the server shows dates and times in it from the next page on.
(function () {
  "use strict";
  var zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch (error) {
    return;
  }
  if (!/^[A-Za-z0-9_+\-\/]{1,64}$/.test(zone)) return;
  var current = document.cookie.split("; ").filter(function (part) {
    return part.indexOf("teamclaw_tz=") === 0;
  })[0];
  if (current === "teamclaw_tz=" + zone) return;
  document.cookie = "teamclaw_tz=" + zone + "; path=/; max-age=31536000; samesite=lax";
})();
