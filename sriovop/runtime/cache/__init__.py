"""Informer machinery: reflector, indexed store, per-handler delivery, shared informers, factory."""

from sriovop.runtime.cache.backoff import Backoff
from sriovop.runtime.cache.factory import InformerFactory
from sriovop.runtime.cache.informer import InformerStopped, SharedIndexInformer
from sriovop.runtime.cache.keys import (
    DeletedFinalStateUnknown,
    meta_namespace_key,
    object_of,
    split_meta_namespace_key,
)
from sriovop.runtime.cache.listener import EventHandler, FuncHandler, Listener
from sriovop.runtime.cache.reflector import Reflector
from sriovop.runtime.cache.store import NAMESPACE_INDEX, IndexFunc, Store, namespace_index

__all__ = [
    "NAMESPACE_INDEX", "Backoff", "DeletedFinalStateUnknown", "EventHandler", "FuncHandler", "IndexFunc",
    "InformerFactory", "InformerStopped", "Listener", "Reflector", "SharedIndexInformer", "Store",
    "meta_namespace_key", "namespace_index", "object_of", "split_meta_namespace_key",
]
