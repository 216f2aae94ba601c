"""The ``notifications:`` section of sparkscope.yaml: its typed settings, value parsers and parser."""
