"""One pass of the config daemon's reconcile loop (reference 3.3, daemon mode).

```
GET NodeState ─► drain annotations present? ─► discover the host ─► generation already applied?
   ├─ yes: host drifted?  no ─► refresh status if it changed, requeue in 30 s
   └─ no (or drift): InProgress ─► plugins: drain? reboot? ─► handshake (request / wait / proceed)
        ─► [gate on: delete the device-plugin pod, wait for its replacement] ─► vendor plugins apply
        ─► reboot needed? report (and reboot a real host) ─► main plugin apply
        ─► [gate on: unblock the replacement | gate off: restart the device plugin]
        ─► desired-state Idle ─► status Succeeded ─► persist the generation
```
The gate is `blockDevicePluginUntilConfigured` (see deviceplugin.py); in the steady state a device-plugin
pod of this node still waiting for its configuration is unblocked.
Beyond upstream: a failed pass reports `syncStatus: Failed` with a `lastSyncError` naming the PF and
step, then raises so the controller retries with backoff (the daemon itself never exits); the applied
generation is persisted on the host (see generation.py). A pass that waited for the drain controller
is not repeated on requeue while nothing it decided from changed (see waiting.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.daemon.deviceplugin import DevicePluginPods
from sriovop.daemon.generation import AppliedGeneration
from sriovop.daemon.handshake import DrainAction, DrainStep, decide_drain
from sriovop.daemon.hostref import HostRef
from sriovop.daemon.nodelabel import FG_LABEL_SRIOV_CAPABLE_NODES, NodeLabeler
from sriovop.daemon.reboot import Rebooter
from sriovop.daemon.rebootguard import RebootGuard
from sriovop.daemon.settings import DaemonSettings, LiveConfig
from sriovop.daemon.status import DrainAnnotator, Recorder, StatusWriter, annotations_of
from sriovop.daemon.systemd_mode import SystemdMode
from sriovop.daemon.waiting import REFRESH_REQUEUES, Waiting
from sriovop.host import Host
from sriovop.host.decision import HostFacts
from sriovop.host.ovs import OvsBridges
from sriovop.host.plugins import Decision, GenericPlugin, MellanoxPlugin, Plugin, load_plugins
from sriovop.host.rdma import RdmaSubsystem
from sriovop.host.steps import StepHook
from sriovop.host.systemd_files import Result as SystemdResult
from sriovop.runtime.client import Client
from sriovop.runtime.controller import Request, Result
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.objects import thaw

log = structlog.get_logger(__name__)

REASON_DRAIN_REQUESTED = "DrainRequested"
REASON_REBOOT_REQUIRED = "RebootRequired"
REASON_REBOOT_NODE = "RebootNode"
REASON_DRIFT = "ConfigurationDrift"
REASON_REBOOT_LOOP = "RebootLoopPrevented"
REASON_MODULE_MISSING = "KernelModuleMissing"


class SyncFailed(Exception):
    """A pass failed on the host; status already says Failed. Raised so the controller backs off."""


@dataclass
class _Observed:
    """What discovery found on this pass, handed from phase to phase (the NodeState's uid and generation
    are read once, so every phase judges the same generation)."""

    uid: str
    generation: int
    host: Host
    interfaces: list[dict[str, Any]]
    bridges: dict[str, Any] | None
    view: dict[str, Any]
    main: Plugin
    extra: list[Plugin]
    #: The host's facts as published on this pass (None when they could not be read).
    facts: HostFacts | None


def _drain_annotations(state: dict[str, Any]) -> tuple[str, str] | None:
    """(desired, current) drain annotations; None until the drain controller has set both."""
    ann = annotations_of(state)
    desired = ann.get(consts.NODE_STATE_DRAIN_ANNOTATION)
    current = ann.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
    if desired is None or current is None:
        return None
    return str(desired), str(current)


class NodeStateReconciler:
    def __init__(
        self, client: Client, settings: DaemonSettings, live: LiveConfig, hosts: HostRef, *,
        recorder: Recorder | None = None, platform: str = "baremetal", hook: StepHook | None = None,
        rebooter: Rebooter | None = None,
        plugin_loader: Callable[..., tuple[Plugin, list[Plugin]]] = load_plugins,
        device_plugin: DevicePluginPods | None = None,
        cached_state: Callable[[], dict[str, Any] | None] | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.live = live
        self.hosts = hosts
        self.recorder = recorder
        self.platform = platform
        self.hook = hook
        self.rebooter = rebooter or Rebooter(settings.host_root, enabled=settings.reboot,
                                             command=settings.reboot_command)
        self.plugin_loader = plugin_loader
        #: This node's NodeState from the informer's cache (None when not there); without it every pass
        #: reads it live.
        self.cached_state = cached_state
        self.status = StatusWriter(client, settings.namespace, settings.node_name, recorder)
        self.drain = DrainAnnotator(client, settings.namespace, settings.node_name)
        self.generations = AppliedGeneration(hosts.paths.state_dir)
        self.node_labels = NodeLabeler(client, settings.node_name)
        self.systemd = SystemdMode(
            platform=platform, dev_mode=settings.dev_mode,
            manage_software_bridges=settings.apply_options.manage_software_bridges,
            ovsdb_socket=settings.apply_options.ovsdb_socket) if settings.systemd_mode else None
        self.guard = RebootGuard(hosts.paths.state_dir, settings.reboot_limit)
        self._modules_reported = 0
        self.device_plugin = device_plugin or DevicePluginPods(
            client, settings.namespace, settings.node_name, timeout=settings.device_plugin_wait_timeout,
            interval=settings.device_plugin_poll_interval)
        #: (uid, generation) of the last pass that failed: its retries keep showing Failed.
        self._failed: tuple[str, int] | None = None
        #: What the last pass that ended waiting for the drain controller decided from (waiting.py).
        self._waiting: Waiting | None = None
        self._log = log.bind(node=settings.node_name)
        #: Completed apply passes (for tests and the benchmark).
        self.applies = 0
        #: Passes ended at once because nothing a waiting pass decided from had changed (for tests).
        self.waits_skipped = 0

    # -- the loop ----------------------------------------------------------------------------------

    def reconcile(self, req: Request) -> Result | None:
        if self._still_waiting():
            self.waits_skipped += 1
            return Result(requeue_after=self.settings.requeue_after)
        try:
            state, live = self._read_state()
        except NotFound:
            self._log.info("no NodeState for this node yet; waiting for the operator to create it")
            return None
        try:
            return self._reconcile(state, live)
        except Conflict as exc:  # someone wrote the NodeState between our read and our write
            self._log.info("NodeState changed while writing it; requeueing", error=str(exc))
            return Result(requeue=True)

    def _still_waiting(self) -> bool:
        """Whether the last pass waited for the drain controller and nothing it decided from changed
        since (waiting.py); forgets that pass otherwise."""
        if self._waiting is None:
            return False
        cached = self.cached_state() if self.cached_state is not None else None
        if self._waiting.holds(cached, self.live, time.monotonic(), REFRESH_REQUEUES * self.settings.requeue_after):
            return True
        self._waiting = None
        return False

    def _read_state(self) -> tuple[dict[str, Any], bool]:
        """The NodeState this pass starts from. The periodic pass on a configured host (its generation
        applied, no failure being retried) reads the informer's cache: at rest it makes no request at
        all. A pass that is going to configure the host reads it live, and every write re-reads it
        right before writing (status.py), so nothing is decided from or written over a stale copy; an
        informer that lags behind only delays that pass to the watch event that follows. The flag says
        whether the copy was read live (a status write may then start from it instead of a GET)."""
        cached = self.cached_state() if self.cached_state is not None else None
        if cached is not None and self._failed is None:
            meta = cached.get("metadata") or {}
            if self.generations.is_applied(str(meta.get("uid", "")), int(meta.get("generation") or 0)):
                return thaw(cached), False  # plain dicts: parts of it are handed to plugins and patches
        return self.status.get(), True

    def _reconcile(self, state: dict[str, Any], live: bool) -> Result | None:
        """One pass, as the phases of the module docstring: each returns early with the Result that ends
        the pass (nothing to do, waiting on the drain controller, rebooting) or hands on what it found."""
        if self._sync_external_drainer(state):
            return None
        drain = _drain_annotations(state)
        if drain is None:
            self._log.info("drain annotations missing on the NodeState; waiting for the drain controller")
            return None
        seen = self._observe(state)
        if self.generations.is_applied(seen.uid, seen.generation):
            if not self._drifted(seen.main, seen.extra, seen.view, state):
                return self._refresh_status(state, seen)
            self._log.info("host drifted from the applied configuration; applying again", generation=seen.generation)
            self._event(state, "Normal", REASON_DRIFT, "The host no longer matches the applied configuration; "
                                                       "applying it again")
        state = self._mark_in_progress(state, seen, live)
        decision, reasons = self._plan(state, seen)
        waiting = self._drain_handshake(state, drain, decision)
        if waiting is not None:
            return waiting
        rebooting = self._apply(state, seen, decision, reasons)
        if rebooting is not None:
            return rebooting
        self._report_applied(state, seen)
        return Result(requeue_after=self.settings.requeue_after)

    # -- phases ------------------------------------------------------------------------------------

    def _observe(self, state: dict[str, Any]) -> _Observed:
        """Discovery: open the host, read its interfaces and bridges, load the plugins for them. Done on
        every pass (also at rest) because drift is judged from what the host looks like now; the facts
        are published so that `sriovop plan` decides with the same inputs."""
        meta = state["metadata"]
        host = self._host(state)
        self._report_module_errors(state)
        interfaces = self._discover(host, state)
        if self.live.gate(FG_LABEL_SRIOV_CAPABLE_NODES):
            self.node_labels.sync(interfaces)
        bridges = self._bridges(host)
        view = {"metadata": meta, "spec": state.get("spec") or {},
                "status": {"interfaces": interfaces, "bridges": bridges or {}}}
        main, extra = self._plugins(host, interfaces, state)
        for plugin in extra:
            if isinstance(plugin, MellanoxPlugin):
                plugin.firmware_reset = self.live.gate(consts.FG_MELLANOX_FIRMWARE_RESET)
        facts = self._publish_facts(host, state, view, (main, *extra))
        return _Observed(uid=str(meta.get("uid", "")), generation=int(meta.get("generation") or 0), host=host,
                         interfaces=interfaces, bridges=bridges, view=view, main=main, extra=extra, facts=facts)

    def _refresh_status(self, state: dict[str, Any], seen: _Observed) -> Result:
        """The steady state (generation applied, no drift): write status only when what it reports
        changed, so a node at rest makes no write; and release a device-plugin pod that restarted on its
        own and waits for its configuration."""
        observed = state.get("status") or {}
        system = self._system(seen.host, seen.facts)
        if observed.get("interfaces") != seen.interfaces or (observed.get("system") or {}) != system or \
                (seen.bridges is not None and (observed.get("bridges") or {}) != seen.bridges):
            # re-reads, so a stale compare costs one GET
            self.status.write(interfaces=seen.interfaces, bridges=seen.bridges, system=system)
        if self.live.gate(consts.FG_BLOCK_DEVICE_PLUGIN_UNTIL_CONFIGURED):
            self.device_plugin.unblock_waiting()  # e.g. the device plugin restarted on its own
        return Result(requeue_after=self.settings.requeue_after)

    def _mark_in_progress(self, state: dict[str, Any], seen: _Observed, live: bool) -> dict[str, Any]:
        """syncStatus InProgress before the host is touched; a retry of a pass that failed keeps showing
        Failed (with its error) until it succeeds, rather than flapping to InProgress on every backoff."""
        retrying_failure = self._failed == (seen.uid, seen.generation) and \
            (state.get("status") or {}).get("syncStatus") == consts.SYNC_STATUS_FAILED
        if retrying_failure:
            return state
        return self.status.write(interfaces=seen.interfaces, sync_status=consts.SYNC_STATUS_IN_PROGRESS,
                                 bridges=seen.bridges, base=state if live else None)

    def _plan(self, state: dict[str, Any], seen: _Observed) -> tuple[Decision, list[str]]:
        """What the change needs (drain, reboot, and why), asked of the plugins (and of systemd mode)
        before anything is applied: the drain handshake must happen first. A reboot that would repeat
        the same reasons too often fails the pass here (the reboot guard)."""
        decision = self._decide(seen.main, seen.extra, seen.view, state, seen.interfaces)
        reasons = reboot_reasons(seen.main, seen.extra, seen.view) if decision.reboot else []
        if self.systemd is not None:
            decision, reasons = self._systemd_decision(seen.host, state, seen.interfaces, decision, reasons)
        if decision.reboot:
            self._check_reboot_guard(seen.host, reasons, state, seen.interfaces)
        else:
            self.guard.clear()
        return decision, reasons

    def _drain_handshake(self, state: dict[str, Any], drain: tuple[str, str], decision: Decision) -> Result | None:
        """The annotation handshake with the drain controller (handshake.py): None when the host may be
        changed now; otherwise the requeue while a drain is requested or under way."""
        desired, current = drain
        if not decision.drain and current == consts.DRAIN_IDLE:
            return None
        action = self._drain_action(drain, decision)
        self._log.info("drain handshake", desired=desired, current=current, drain=decision.drain,
                       reboot=decision.reboot, step=action.step.value, reason=action.reason)
        if action.step is DrainStep.WAIT:
            self._waiting = Waiting.after(self.live, time.monotonic(), state)
            return Result(requeue_after=self.settings.requeue_after)
        if action.step is DrainStep.REQUEST:
            assert action.annotation is not None
            written = self.drain.set_desired(action.annotation, state)
            if action.annotation != consts.DRAIN_IDLE:
                self._event(state, "Normal", REASON_DRAIN_REQUESTED,
                            f"Requested {action.annotation} before changing the host configuration")
                self._wait_after_request(state, written, decision)
            return Result(requeue_after=self.settings.requeue_after)
        return None

    def _drain_action(self, drain: tuple[str, str], decision: Decision) -> DrainAction:
        desired, current = drain
        return decide_drain(desired, current, need_drain=decision.drain, need_reboot=decision.reboot,
                            disable_drain=self.live.disable_drain)

    def _wait_after_request(self, state: dict[str, Any], written: dict[str, Any] | None, decision: Decision) -> None:
        """A pass that asked for a drain waits like one that found it asked for: the pass its own writes
        enqueue would read the NodeState live, discover the host and decide to wait, in every node at
        once as a rollout begins. It waits only when the NodeState as written says so."""
        if written is None:
            return
        drain = _drain_annotations(written)
        if drain is not None and self._drain_action(drain, decision).step is DrainStep.WAIT:
            self._waiting = Waiting.after(self.live, time.monotonic(), state, written)

    def _apply(self, state: dict[str, Any], seen: _Observed, decision: Decision, reasons: list[str]) -> Result | None:
        """Vendor plugins, then (unless a reboot is needed first) the main plugin, with the device plugin
        held back meanwhile when the gate is on (steps 11.1 and 11.5). Returns the Result of a pass that
        ends in a reboot, None when the host is configured. A failure reports Failed and raises."""
        block = self.live.gate(consts.FG_BLOCK_DEVICE_PLUGIN_UNTIL_CONFIGURED)
        restart = self.device_plugin.restart() if block else None  # step 11.1
        try:
            for plugin in seen.extra:
                plugin.apply()
            if decision.reboot:
                return self._reboot_needed(seen.host, reasons, state, seen.interfaces)
            if self.systemd is None:  # systemd mode: the host's services configure it at boot
                seen.main.apply()
        except Exception as exc:
            self._fail(state, seen.interfaces, seen.host, _describe(exc))
            raise SyncFailed(_describe(exc)) from exc
        if restart is not None:  # step 11.5
            self.device_plugin.wait_and_unblock(restart)
        else:
            self.device_plugin.restart(wait=False)
        return None

    def _report_applied(self, state: dict[str, Any], seen: _Observed) -> None:
        """Release the drain, report the configured host (Succeeded, or systemd mode's result) and
        persist the generation, so the next pass at rest knows it is applied."""
        host = seen.host
        # The NodeState as the Idle annotation's patch wrote it is as fresh as a read; a GET only when
        # no patch was needed (no drain was asked for). The status write below still reads first: the
        # drain controller answers the Idle at once (uncordon, current-state Idle), and a write based
        # on this copy lost that race to a 409 for more than half of the nodes of a 1,000-node rollout.
        fresh = self.drain.set_desired(consts.DRAIN_IDLE, state) or self.status.get()
        interfaces = self._discover(host, state)
        facts = self._publish_facts(host, fresh, {"spec": seen.view["spec"], "status": {"interfaces": interfaces}},
                                    (seen.main, *seen.extra))
        # Counted before the Succeeded status is written: whoever waits for that status and then reads
        # the counter must never see it lag behind the state it observed.
        self.applies += 1
        done = SystemdMode.result(host) if self.systemd is not None else SystemdResult(consts.SYNC_STATUS_SUCCEEDED)
        self.status.write(interfaces=interfaces, sync_status=done.sync_status, last_sync_error=done.last_sync_error,
                          bridges=self._bridges(host), system=self._system(host, facts))
        self.generations.save(seen.uid, seen.generation)
        self._failed = None
        self._log.info("configuration applied", generation=seen.generation)

    # -- steps -------------------------------------------------------------------------------------

    def _systemd_decision(self, host: Host, state: dict[str, Any], interfaces: list[dict[str, Any]],
                          decision: Decision, reasons: list[str]) -> tuple[Decision, list[str]]:
        assert self.systemd is not None
        try:
            sd = self.systemd.decide(host, state.get("spec") or {})
        except Exception as exc:
            message = f"systemd mode: {_describe(exc)}"
            self._fail(state, interfaces, None, message)
            raise SyncFailed(message) from exc
        if not sd.reboot:
            return decision, reasons
        return Decision(drain=True, reboot=True), [*reasons, sd.reason]


    def _host(self, state: dict[str, Any]) -> Host:
        try:
            return self.hosts.get()
        except Exception as exc:
            message = f"cannot open the host at {self.settings.host_root}: {_describe(exc)}"
            self._fail(state, None, None, message)
            raise SyncFailed(message) from exc

    def _publish_facts(self, host: Host, state: dict[str, Any], view: dict[str, Any],
                       plugins: tuple[Plugin, ...]) -> HostFacts | None:
        """The host's facts plus what each plugin's decision reads (`contribute_facts`), so that
        `sriovop plan` decides with the same inputs as these plugins. Returns the host's own facts, read
        once per pass (None when that failed)."""
        host_facts = None
        try:
            facts = host_facts = host.facts()
            for plugin in plugins:
                contribute = getattr(plugin, "contribute_facts", None)
                if contribute is not None:
                    facts = contribute(view, facts)
            self.drain.set_host_facts(facts.to_json(), state)
        except Exception as exc:  # only `sriovop plan` reads them; never fail a pass over it
            self._log.warning("host facts not published", error=_describe(exc))
        return host_facts

    def _report_module_errors(self, state: dict[str, Any]) -> None:
        """tun/vhost_net that failed to load when the host was opened: a Warning Event once per opening
        (pods of needVhostNet policies get /dev/vhost-net only when they are loaded)."""
        if self.hosts.module_errors and self._modules_reported != self.hosts.opened:
            self._modules_reported = self.hosts.opened
            failed = "; ".join(f"{name}: {error}" for name, error in sorted(self.hosts.module_errors.items()))
            self._event(state, "Warning", REASON_MODULE_MISSING,
                        f"kernel modules for needVhostNet policies are not loaded ({failed})")

    def _system(self, host: Host, facts: HostFacts | None) -> dict[str, Any]:
        """`status.system`: the running kernel's RDMA netns mode (absent without ib_core), as upstream;
        from the pass's facts when it has them (the mode is a round trip to the kernel)."""
        mode = facts.rdma_mode if facts is not None else RdmaSubsystem(host.paths, host.io).mode()
        return {"rdmaMode": mode} if mode else {}

    def _discover(self, host: Host, state: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            return host.discover()
        except Exception as exc:
            message = f"discovery failed: {_describe(exc)}"
            self._fail(state, None, None, message)
            raise SyncFailed(message) from exc

    def _bridges(self, host: Host) -> dict[str, Any] | None:
        """status.bridges with bridge management on ({} when no managed bridge exists); None when off
        or when OVSDB cannot be read (the field is left as it is; an apply reports the OVSDB error)."""
        options = self.settings.apply_options
        if not options.manage_software_bridges:
            return None
        try:
            found = OvsBridges(host.paths, options.ovsdb_socket or None).status()
        except OSError as exc:
            self._log.warning("cannot read the managed OVS bridges", error=str(exc))
            return None
        return {"ovs": found} if found else {}

    def _plugins(self, host: Host, interfaces: list[dict[str, Any]],
                 state: dict[str, Any]) -> tuple[Plugin, list[Plugin]]:
        try:
            return self.plugin_loader(host, interfaces, platform=self.platform,
                                      disabled=self.settings.disable_plugins, hook=self.hook,
                                      options=self.settings.apply_options)
        except Exception as exc:
            message = f"loading plugins: {_describe(exc)}"
            self._fail(state, interfaces, None, message)
            raise SyncFailed(message) from exc

    def _drifted(self, main: Plugin, extra: list[Plugin], view: dict[str, Any], state: dict[str, Any]) -> bool:
        try:
            return any(p.check_status_changes(view) for p in (main, *extra))
        except Exception as exc:
            message = f"checking the host for drift: {_describe(exc)}"
            self._fail(state, view["status"]["interfaces"], None, message)
            raise SyncFailed(message) from exc

    def _decide(self, main: Plugin, extra: list[Plugin], view: dict[str, Any], state: dict[str, Any],
                interfaces: list[dict[str, Any]]) -> Decision:
        decision = Decision()
        try:
            for plugin in (main, *extra):
                decision = decision | plugin.on_node_state_change(view)
        except Exception as exc:
            message = f"{getattr(plugin, 'name', 'plugin')}: {_describe(exc)}"
            self._fail(state, interfaces, None, message)
            raise SyncFailed(message) from exc
        return decision

    def _check_reboot_guard(self, host: Host, reasons: list[str], state: dict[str, Any],
                            interfaces: list[dict[str, Any]]) -> None:
        """No reboot loops: the same reasons after `--reboot-limit` reboots fail the pass instead, and
        the node's drain request is withdrawn so the drain controller uncordons it."""
        failure = self.guard.exhausted(reasons, host.kargs.boot_id())
        if failure is None:
            return
        if annotations_of(state).get(consts.NODE_STATE_DRAIN_ANNOTATION) != consts.DRAIN_IDLE:
            self.drain.set_desired(consts.DRAIN_IDLE, self.status.get())
        self._event(state, "Warning", REASON_REBOOT_LOOP, failure)
        self._fail(state, interfaces, host, failure)
        raise SyncFailed(failure)

    def _reboot_needed(self, host: Host, reasons: list[str], state: dict[str, Any],
                       interfaces: list[dict[str, Any]]) -> Result:
        count = self.guard.rebooting(reasons, host.kargs.boot_id())
        skip = self.rebooter.why_not(simulated=host.simulated)
        message = (f"node reboot required ({'; '.join(reasons) or 'plugin request'}; reboot {count} of at most "
                   f"{self.guard.limit}): {skip or 'reboot started'}")
        self._log.warning("reboot required", reasons=reasons, action=skip or "reboot started")
        self._event(state, "Warning", REASON_REBOOT_REQUIRED, message)
        # Written before the reboot: a rebooting node may not get to write anything after it.
        self.status.write(interfaces=interfaces, sync_status=consts.SYNC_STATUS_IN_PROGRESS,
                          last_sync_error=message)
        if skip is None:
            self._event(state, "Normal", REASON_REBOOT_NODE, "Reboot node has been initiated")
            self.rebooter.reboot(simulated=host.simulated)
        return Result(requeue_after=self.settings.requeue_after)

    def _fail(self, state: dict[str, Any], interfaces: list[dict[str, Any]] | None, host: Host | None,
              message: str) -> None:
        meta = state["metadata"]
        self._failed = (str(meta.get("uid", "")), int(meta.get("generation") or 0))
        self._log.error("sync failed", error=message)
        if interfaces is not None and host is not None:
            try:  # show what the host looks like after the failed PF was reset
                interfaces = host.discover()
            except Exception:
                pass
        self.status.write(interfaces=interfaces, sync_status=consts.SYNC_STATUS_FAILED, last_sync_error=message)

    def _sync_external_drainer(self, state: dict[str, Any]) -> bool:
        """Step 2: add/remove the external-drainer marker, only while no drain is under way."""
        ann = annotations_of(state)
        has = ann.get(consts.NODE_STATE_EXTERNAL_DRAINER_ANNOTATION) == "true"
        if has == self.settings.use_external_drainer:
            return False
        desired = ann.get(consts.NODE_STATE_DRAIN_ANNOTATION)
        current = ann.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
        idle = desired == consts.DRAIN_IDLE and current == consts.DRAIN_IDLE
        if not (idle or (desired is None and current is None)):
            return False
        self.drain.set_external_drainer(self.settings.use_external_drainer)
        return True

    def _event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(obj, type_, reason, message)


def reboot_reasons(main: Plugin, extra: list[Plugin], view: dict[str, Any]) -> list[str]:
    reasons = []
    if isinstance(main, GenericPlugin):
        missing = main.missing_kernel_args(view)
        if missing:
            reasons.append("kernel arguments missing from /proc/cmdline: " + " ".join(missing))
    for plugin in extra:
        if isinstance(plugin, MellanoxPlugin) and plugin.pending:
            reasons.append("Mellanox firmware settings changed: " + ", ".join(
                f"{pci} {settings}" for pci, settings in sorted(plugin.pending.items())))
    return reasons


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__
