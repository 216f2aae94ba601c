"""Blueprints, one per page family."""

from __future__ import annotations

from flask import Flask


def register_blueprints(app: Flask) -> None:
    """Register every blueprint and the Jinja filters on ``app``."""
    from sparkscope.web.filters import register_filters
    from sparkscope.web.request import (
        AppIdConverter,
        app_api_link,
        app_link,
        config_error_context,
        here,
        stage_link,
        timeline_link,
        whatif_api_link,
        whatif_link,
    )
    from sparkscope.web.views import (
        api,
        compare,
        dashboard,
        detail,
        help,
        history,
        notifications,
        search,
        sizing,
        stage,
        timeline,
    )

    app.url_map.converters["app_id"] = AppIdConverter
    register_filters(app)
    app.jinja_env.globals.update(
        app_url=app_link,
        app_api_url=app_api_link,
        whatif_url=whatif_link,
        whatif_api_url=whatif_api_link,
        stage_url=stage_link,
        timeline_url=timeline_link,
        here=here,
    )
    app.context_processor(config_error_context)  # the banner on every page, none can forget it
    for module in (
        dashboard,
        search,
        detail,
        sizing,
        compare,
        history,
        notifications,
        help,
        api,
        stage,
        timeline,
    ):
        app.register_blueprint(module.bp)
    from sparkscope.web.views import whatif

    app.register_blueprint(whatif.bp)
