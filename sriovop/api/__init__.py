"""The sriovnetwork.openshift.io API: types, schemas, defaults and pure helpers, one package per version."""
