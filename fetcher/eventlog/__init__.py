"""Spark event logs as a source: the logs read and replayed the way a Spark History Server does
(``read`` layouts and codecs, ``replay`` listener state, ``rest`` and ``sql`` the SHS's JSON
answers, ``app`` one replayed application), and the fetcher's event-log source built on them."""
