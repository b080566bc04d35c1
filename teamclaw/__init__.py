"""TeamClaw Capability System: Django project package (settings, urls, asgi, runtime)."""
