"""Alerts and digests: deciding them (rules, mutes, throttling), the outbox they are written to,
rendering them for e-mail, Slack and webhooks, and sending them once each."""
