"""Webhook deliveries: one signed POST (webhooks__send) and the signing keys."""
