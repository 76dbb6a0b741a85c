"""Which model each kind of call uses, how hot and how long: the default allocation as data.

Faultline sends cheap, frequent, low-stakes calls (chat turns, detection, exit checks) to a
small model and the calls whose quality matters (crux rooms, cards, building contracts) to a
strong one. Here that table is the default of :class:`ModelAllocation`: two tiers, ``cheap``
and ``strong``, each a model spec, and per role a tier (or a spec of its own), a temperature
and a token budget. ``--model ROLE=SPEC`` or ``--model TIER=SPEC`` overrides it; the resolved
table is recorded with every debate, and usage is accounted per role.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, field_validator

from loom_sim.debate.contract import Strict
from loom_sim.models.base import ModelError
from loom_sim.models.hub import parse_spec

TIERS = ("cheap", "strong")
DEFAULT_MODEL = "local/smollm2"


class RoleSpec(Strict):
    model: str | None = Field(None, description="A tier (cheap, strong) or a model spec.")
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(None, ge=1, le=131_072)

    @field_validator("model")
    @classmethod
    def _tier_or_spec(cls, value: str | None) -> str | None:
        if value is not None and value not in TIERS:
            _check_spec(value)
        return value


def _check_spec(value: str) -> None:
    """A malformed spec as a validation error, so the loader places it at its line."""
    try:
        parse_spec(value)
    except ModelError as err:
        raise ValueError(str(err).rstrip(".")) from None


#: The default table: role -> (tier, temperature, max tokens).
DEFAULT_ROLES: dict[str, tuple[str, float, int]] = {
    "opening": ("cheap", 1.0, 200),
    "turn": ("cheap", 1.0, 200),
    "detection": ("cheap", 0.2, 150),
    "room_opening": ("strong", 0.9, 150),
    "room_turn": ("strong", 0.9, 200),
    "exit_check": ("cheap", 0.2, 150),
    "card": ("strong", 0.3, 600),
    "relevance": ("strong", 0.7, 1024),
    "contract": ("strong", 0.7, 2048),
}
ROLES = tuple(DEFAULT_ROLES)


@dataclass(frozen=True)
class RoleModel:
    """A role's resolved call settings."""

    role: str
    spec: str
    temperature: float
    max_tokens: int


class ModelAllocation(Strict):
    cheap: str = Field(DEFAULT_MODEL, description="The cheap tier's model spec.")
    strong: str = Field(DEFAULT_MODEL, description="The strong tier's model spec.")
    roles: dict[str, RoleSpec] = Field(
        default_factory=dict,
        description="Per role (" + ", ".join(ROLES) + "): tier or model, temperature, max_tokens.",
    )

    @field_validator("cheap", "strong")
    @classmethod
    def _spec(cls, value: str) -> str:
        _check_spec(value)
        return value

    @field_validator("roles")
    @classmethod
    def _known(cls, roles: dict[str, RoleSpec]) -> dict[str, RoleSpec]:
        unknown = sorted(set(roles) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role {unknown[0]!r}; roles are {', '.join(ROLES)}")
        return roles

    def overridden(self, given: dict[str, str]) -> ModelAllocation:
        """This allocation with ``--model NAME=SPEC`` pairs applied (NAME a tier or a role)."""
        data = self.model_dump()
        for name, spec in given.items():
            if name in TIERS:
                data[name] = spec
            elif name in ROLES:
                data["roles"].setdefault(name, {})["model"] = spec
            else:
                raise ValueError(
                    f"--model {name}={spec}: {name!r} is neither a tier ({', '.join(TIERS)}) "
                    f"nor a role ({', '.join(ROLES)})"
                )
        return ModelAllocation.model_validate(data)

    def resolve(self, role: str) -> RoleModel:
        tier, temperature, max_tokens = DEFAULT_ROLES[role]
        given = self.roles.get(role, RoleSpec())
        model = given.model or tier
        spec = getattr(self, model) if model in TIERS else model
        return RoleModel(
            role,
            spec,
            temperature if given.temperature is None else given.temperature,
            max_tokens if given.max_tokens is None else given.max_tokens,
        )

    def table(self) -> dict[str, RoleModel]:
        return {role: self.resolve(role) for role in ROLES}
