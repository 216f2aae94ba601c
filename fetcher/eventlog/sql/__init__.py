"""The SQL listener's replay and the ``/sql`` answers."""
