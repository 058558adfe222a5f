"""The compiled form of a schema that both directions walk: template out, payload back in.

`schema_to_template` renders these nodes; `template_to_payload` walks a filled template with
the very same nodes, so the two directions cannot disagree about what a position means.
"""

from dataclasses import dataclass
from typing import Any

from compiler.imprint.tokens import Token


@dataclass(frozen=True, slots=True)
class Leaf:
    """A token position. `schema_type` is None for an untyped schema (any JSON value)."""

    token: Token
    required: bool
    schema_type: str | None
    enum: tuple[Any, ...] | None = None
    always_auto: bool = False  # x-forge-auto: generated even when not required


@dataclass(frozen=True, slots=True)
class Prop:
    name: str
    node: "Node"
    required: bool


@dataclass(frozen=True, slots=True)
class KeySlot:
    """Map entries: additionalProperties (pattern None) or one patternProperties pattern."""

    key: Token
    pattern: str | None
    node: "Node"


@dataclass(frozen=True, slots=True)
class Obj:
    props: tuple[Prop, ...]
    slots: tuple[KeySlot, ...] = ()
    open: bool = False  # additionalProperties: true (explicitly): extra keys pass through
    forbidden: tuple[str, ...] = ()  # properties whose schema is false: they must be absent
    nullable: bool = False
    min_props: int | None = None
    max_props: int | None = None


@dataclass(frozen=True, slots=True)
class Arr:
    item: "Node"
    nullable: bool = False
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False


@dataclass(frozen=True, slots=True)
class Tup:
    """A tuple (prefixItems, or draft-04 `items` as a list): one node per position.

    The template is the list of per-position templates. Positions at or past `min_items` are
    optional and may be left off the end. `rest` converts items past the positions (it is not
    templated); None means the schema allows no further items.
    """

    positions: tuple["Node", ...]
    rest: "Node | None"
    nullable: bool = False
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False


@dataclass(frozen=True, slots=True)
class OneOf:
    """Alternatives; `discriminator` is (property, {value: alternative index})."""

    alts: tuple["Node", ...]
    discriminator: tuple[str, dict[str, int]] | None = None


@dataclass(frozen=True, slots=True)
class Embedded:
    """A string carrying JSON: the template shows `inner`; the payload is its JSON text."""

    inner: "Node"
    required: bool
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class RefMark:
    """`{REF: circular}` or `{REF: max_depth}`: `pointer` is compiled on demand if filled."""

    marker: str
    pointer: str
    required: bool


Node = Leaf | Obj | Arr | Tup | OneOf | Embedded | RefMark
