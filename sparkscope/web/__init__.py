"""The web application: factory, request helpers, views (one blueprint per page family)."""
