"""What one policy sync did to its nodes: the errors to requeue with, and the policies to warn about.

The full sync and a node's own sync both write NodeStates and must judge each node's outcome the same
way: a policy that cannot be applied is an error of that node and a Warning Event on that policy; a
NodeState that changed or vanished under the write is an error of that node, retried by the requeue.
Other exceptions are bugs and propagate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sriovop.controllers.node_policy_apply import PolicyError
from sriovop.runtime.errors import Conflict, NotFound

#: How many errors the requeue's message names; the rest are counted.
NAMED_ERRORS = 5


@dataclass
class SyncOutcome:
    errors: list[str] = field(default_factory=list)
    #: policy name -> why it cannot be applied (one message per policy; the last node's wins).
    bad_policies: dict[str, str] = field(default_factory=dict)

    def node(self, name: str, write: Callable[[], object]) -> None:
        """Run (or collect) node `name`'s NodeState write and record how it ended."""
        try:
            write()
        except PolicyError as exc:
            self.errors.append(f"NodeState {name}: {exc}")
            self.bad_policies[exc.policy_name] = str(exc)
        except (Conflict, NotFound) as exc:
            self.errors.append(f"NodeState {name}: {exc}")

    def raise_if_incomplete(self, what: str) -> None:
        """A RuntimeError naming the first errors, so the controller logs them and requeues the sync."""
        if not self.errors:
            return
        more = len(self.errors) - NAMED_ERRORS
        raise RuntimeError(f"{what} incomplete: " + "; ".join(self.errors[:NAMED_ERRORS])
                           + (f" (and {more} more)" if more > 0 else ""))
