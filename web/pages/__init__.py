"""Pages: one module per object, function views (parse, authorize, call, render)."""
