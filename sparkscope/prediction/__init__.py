"""Expected durations of recurring runs: the database side (refresh, reads, backtest)."""
