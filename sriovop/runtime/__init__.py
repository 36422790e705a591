"""A small client-go for Python: reflector, indexed cache, shared informers, work queues, managers.

Nothing in this package knows about SR-IOV. Map of the public API:

- `config.load_config(path | None) -> RestConfig` — explicit path, else $KUBECONFIG, else in-cluster,
  else ~/.kube/config. Timeouts (connect/read/watch read) are fields of RestConfig.
- `client.Client(cfg)` — JSON dicts in and out: get/list/create/update/update_status/patch
  (merge, json, strategic, apply; subresource=)/delete/watch/list_page. Errors: `errors.*`.
  `client.Reader` is the read protocol (get/list) that `Client`, `UncachedReader`,
  `cache.reader.Cache` and `DelegatingClient` all satisfy.
- `cache.SharedIndexInformer`, `cache.InformerFactory`, `cache.Store`, `cache.FuncHandler`,
  `cache.DeletedFinalStateUnknown` — informers over one (kind, namespace, selectors).
- `objects.thaw(obj)` — a mutable copy of a read-only cached object.
- `manager.Manager` — cache scope, field indexes, delegating client, runnables, probes, metrics,
  leader-election seam, ordered shutdown. `controller.Controller` — workers, reconcile, requeue,
  predicates, metrics.
- `workqueue`, `leaderelection`, `events` — see their own packages.
"""
