"""One module per reconciler; each exposes a class with `setup(manager)` (see each module's docstring).

Which manager hosts what (wired in sriovop/operator/app.py):
- namespaced manager (operator namespace + Nodes): `node_policy.NodePolicyReconciler`,
  `operator_config.OperatorConfigReconciler`, `pool_config.PoolConfigReconciler`,
  `drain.DrainReconciler` (reads Nodes, NodeStates and pools uncached), and in the self-managed
  certificate mode `webhook_certs.WebhookCertReconciler` (the webhooks' CA and serving certificates);
- cluster-wide manager: `networks.NetworkReconciler`, once per network kind, with the
  `spec.networkNamespace` field index.

Helpers shared by reconcilers: `apply` (create-or-merge-update of rendered objects),
`ready_condition` (Ready and its companion conditions through server-side apply), `pool_config.PoolMembership`
(pool lookup used by drain, policy and plan), `node_policy_apply` (policy merge).
"""
