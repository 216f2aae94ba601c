"""Recurring-run prediction, what-if simulation and sizing.

Pure functions over plain arrays and dataclasses: no database, no Flask. numpy, scipy and
scikit-learn are imported inside the functions that need them, so the CLI and the web app start
fast. The database glue (reading run features, storing predictions) lives outside this package.
"""
