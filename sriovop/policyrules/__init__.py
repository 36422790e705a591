"""The SriovNetworkNodePolicy admission rules, shared by the validating webhook and `sriovop plan`.

They live in a room of their own so that the webhook (which enforces them) and the planner (which
reports what they would say, or warns about them when no webhook enforces them) import the same code
and neither imports the other. Nothing here knows HTTP or AdmissionReviews.
"""
