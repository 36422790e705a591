"""A tiny schema language: TypedDicts annotated with markers are the single description of each kind.

From them we derive the CRD OpenAPI v3 schemas (`openapi`), server-side-style defaulting
(`defaults`) and a local structural validator (`validate`) that judges objects as the API server does.
"""
