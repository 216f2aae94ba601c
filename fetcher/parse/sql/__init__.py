"""The SQL executions of an application: their metrics, plan text, graph and stage links, as rows."""
