"""Blueprints, one per page family."""

from __future__ import annotations

from flask import Flask


def register_blueprints(app: Flask) -> None:
    """Register every blueprint and the Jinja filters on ``app``."""
    from sparkscope.views import api, compare, dashboard, detail, help, history, search
    from sparkscope.views.filters import register_filters

    register_filters(app)
    for module in (dashboard, search, detail, compare, history, help, api):
        app.register_blueprint(module.bp)
    from sparkscope.views import whatif  # what-if and sizing API (issue 14)

    app.register_blueprint(whatif.bp)
