"""SQL-plan checks: the queries and operators of an application's SQL executions (the History Server's `/sql` answer)."""
