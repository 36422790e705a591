"""The local demo: a control plane, the webhook, two operator replicas and two simulated nodes."""
