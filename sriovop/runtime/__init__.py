"""A small client-go for Python: reflector, indexed cache, shared informers, work queues, managers.

Nothing in this package knows about SR-IOV.
"""
