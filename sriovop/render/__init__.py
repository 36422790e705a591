"""What the operator writes to the cluster, rendered as plain JSON dicts/strings from API objects.

Pure functions only: no client, no cache. Controllers decide when to apply what is rendered here.
"""
