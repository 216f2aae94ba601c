"""Duration prediction numerics: features, baselines, the rolling origin, class-aware model, forecast, verdicts."""
