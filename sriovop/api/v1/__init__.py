"""sriovnetwork.openshift.io/v1: kinds, constants, schemas (the single source of the CRDs) and pure helpers.

Objects stay plain JSON dicts everywhere; this package describes them and answers questions about
them without building model objects.
"""
