"""Compatible intake, so existing monitors send to UNS unchanged: ``pagerduty`` (Events API v2)
and ``alertmanager`` (Prometheus Alertmanager webhook, payload version 4)."""
