"""`sriovop demo pod`: a pod gets a real igbvf VF on the QEMU guest node of a dev cluster (sriovop/demo/pod.py)."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_DIR = Path("/tmp/sriovop-demo-pod")
REPO = Path(__file__).resolve().parents[2]


@click.command("pod")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DIR,
              show_default=True, help="The dev cluster's directory: a cluster with a QEMU guest node running "
                                      "there is reused, else one is brought up there.")
@click.option("--nodes", type=int, default=1, show_default=True,
              help="Host kubelet nodes of a cluster brought up here (the guest node comes after them).")
@click.option("--images", type=click.Path(file_okay=False, path_type=Path), default=REPO / "build" / "images",
              show_default=True, help="The image archives of `make images`.")
@click.option("--keep", is_flag=True,
              help="Leave the cluster, the policy, the network and the pod running, and print the `down` "
                   "command. Default: a cluster brought up here is stopped at the end (its guest too); "
                   "on a reused cluster only the demo's objects are deleted.")
@click.option("--timeout", type=float, default=1200.0, show_default=True,
              help="Seconds each wait may take (the guest runs under TCG on a busy machine: minutes).")
def command(directory: Path, nodes: int, images: Path, keep: bool, timeout: float) -> None:
    """Policy, SriovNetwork and a pod on the QEMU guest node; prints the pod's net1 (`ip -d link`,
    its driver) and its network-status annotation, and each step's duration."""
    from sriovop.commands.dev import _supervisor_pid
    from sriovop.demo.pod import DemoFailed, PodDemo, self_command
    from sriovop.demo.podplan import PlanError, PodDemoOptions, cluster_state, make_plan
    from sriovop.devcluster.images.load import LoadError
    from sriovop.devcluster.vmguest import GuestError

    directory = directory.resolve()
    options = PodDemoOptions(directory, nodes, images.resolve(), keep, timeout)
    try:
        plan = make_plan(options, cluster_state(directory, _supervisor_pid(directory) is not None))
    except PlanError as exc:
        raise click.UsageError(str(exc)) from None
    demo = PodDemo(plan, click.echo)
    try:
        outcome = demo.run()
    except (DemoFailed, GuestError, LoadError) as exc:
        raise click.ClickException(f"{exc}\n(cluster logs in {directory}; guest logs in {directory / 'vm'})") from exc
    click.echo("")
    click.echo("$ ip -d link show net1          # in the pod, on the guest node")
    click.echo(outcome.link.rstrip())
    click.echo("$ ethtool -i net1")
    click.echo(outcome.ethtool.rstrip())
    click.echo(f"net1's driver (sysfs): {outcome.driver_sysfs.rsplit('/', 1)[-1]}")
    click.echo("k8s.v1.cni.cncf.io/network-status:")
    click.echo(outcome.network_status)
    click.echo("")
    click.echo("step durations:")
    for name, seconds in outcome.durations:
        click.echo(f"  {seconds:7.1f}s  {name}")
    click.echo(f"  {sum(s for _n, s in outcome.durations):7.1f}s  total")
    if keep:
        click.echo(f"left running; stop it with: {self_command()} dev cluster down --dir {directory}")
