"""Blueprints, one per page family."""

from __future__ import annotations

from flask import Flask


def register_blueprints(app: Flask) -> None:
    """Register every blueprint on ``app``."""
    from sparkscope.views import dashboard

    app.register_blueprint(dashboard.bp)
