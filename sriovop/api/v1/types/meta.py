"""Shapes borrowed from k8s.io/apimachinery meta/v1: Condition and LabelSelector, with their validation."""

from typing import Annotated, Literal, Required, TypedDict

from sriovop.api.v1.schema.markers import (
    Doc,
    Format,
    ListMap,
    ListType,
    MapType,
    MaxLength,
    Minimum,
    MinLength,
    Pattern,
)


class Condition(TypedDict, total=False):
    """Condition contains details for one aspect of the current state of this API Resource."""

    type: Required[
        Annotated[
            str,
            Doc("type of condition in CamelCase or in foo.example.com/CamelCase."),
            MaxLength(316),
            Pattern(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
            ),
        ]
    ]
    status: Required[
        Annotated[Literal["True", "False", "Unknown"],
            Doc(
                "status of the condition, one of True, False, Unknown."
            )]
    ]
    observedGeneration: Annotated[
        int,
        Doc("observedGeneration represents the .metadata.generation that the condition was set based upon."),
        Format("int64"),
        Minimum(0),
    ]
    lastTransitionTime: Required[
        Annotated[
            str,
            Doc("lastTransitionTime is the last time the condition transitioned from one status to another."),
            Format("date-time"),
        ]
    ]
    reason: Required[
        Annotated[
            str,
            Doc(
                "reason contains a programmatic identifier indicating the reason for the "
                "condition's last transition."
            ),
            MaxLength(1024),
            MinLength(1),
            Pattern(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        ]
    ]
    message: Required[
        Annotated[
            str,
            Doc("message is a human readable message indicating details about the transition."),
            MaxLength(32768),
        ]
    ]


Conditions = Annotated[
    list[Condition],
    Doc("Conditions represent the latest available observations of the resource's state"),
    ListMap(("type",)),
]


class NetworkStatus(TypedDict, total=False):
    """Observed state of a network CR: a `Ready` condition set by the network controller."""

    conditions: Conditions


class LabelSelectorRequirement(TypedDict, total=False):
    """A label selector requirement: a key, an operator and values."""

    key: Required[Annotated[str, Doc("key is the label key that the selector applies to.")]]
    operator: Required[
        Annotated[str, Doc("operator: one of In, NotIn, Exists and DoesNotExist.")]
    ]
    values: Annotated[
        list[str],
        Doc("values: non-empty for In and NotIn, empty for Exists and DoesNotExist."),
        ListType("atomic"),
    ]


class LabelSelector(TypedDict, total=False):
    """A label query over a set of resources; matchLabels and matchExpressions are ANDed."""

    matchExpressions: Annotated[
        list[LabelSelectorRequirement],
        Doc("matchExpressions is a list of label selector requirements. The requirements are ANDed."),
        ListType("atomic"),
    ]
    matchLabels: Annotated[
        dict[str, str],
        Doc("matchLabels is a map of {key,value} pairs, each equivalent to an `In` requirement."),
    ]


AtomicLabelSelector = Annotated[LabelSelector, MapType("atomic")]
