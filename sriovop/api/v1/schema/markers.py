"""Markers placed in `Annotated[...]` on TypedDict fields; the kubebuilder `+kubebuilder:...` of this project.

Each marker carries one OpenAPI keyword, so the schema generator can stay a dumb walker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Doc:
    """Field description shown by `kubectl explain`."""

    text: str


@dataclass(frozen=True, slots=True)
class Default:
    """Value the API server fills in when the field is absent (CRD structural defaulting)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Minimum:
    value: int


@dataclass(frozen=True, slots=True)
class Maximum:
    value: int


@dataclass(frozen=True, slots=True)
class MinLength:
    value: int


@dataclass(frozen=True, slots=True)
class MaxLength:
    value: int


@dataclass(frozen=True, slots=True)
class Pattern:
    regex: str


@dataclass(frozen=True, slots=True)
class Format:
    name: str


@dataclass(frozen=True, slots=True)
class ListMap:
    """`x-kubernetes-list-type: map` keyed by these item fields (e.g. conditions by `type`)."""

    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListType:
    """`x-kubernetes-list-type`: atomic or set."""

    name: str


@dataclass(frozen=True, slots=True)
class MapType:
    """`x-kubernetes-map-type`: atomic or granular."""

    name: str


Marker = (
    Doc | Default | Minimum | Maximum | MinLength | MaxLength | Pattern | Format
    | ListMap | ListType | MapType
)
