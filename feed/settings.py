"""Server settings: the partners that may call us and the host tablets' tokens.

Secrets come from the environment (HOSTSTAND_PARTNER_SECRET_<ID>, HOSTSTAND_HOST_TOKEN_<ID>,
HOSTSTAND_PARTNER_PASSWORD_<ID>) or from the file; files in the repo carry sample secrets only.
pydantic stays here: `load_settings` turns the file into plain values.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SettingsError(Exception):
    """A settings file that cannot be used; one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _PartnerModel(_Strict):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    secret: str | None = Field(default=None, min_length=16)
    merchants: list[str] | None = None  # None: every restaurant the server runs
    basic_user: str | None = None
    basic_password: str | None = None


class _HostModel(_Strict):
    merchant_id: str = Field(min_length=1)
    token: str | None = Field(default=None, min_length=16)


class _SettingsModel(_Strict):
    partners: list[_PartnerModel] = []
    hosts: list[_HostModel] = []


@dataclass(frozen=True)
class Partner:
    id: str
    secret: str | None  # webhook signing secret; None: this partner sends no webhooks
    merchants: frozenset[str] | None
    basic_user: str | None = None
    basic_password: str | None = None

    def may_use(self, merchant_id: str) -> bool:
        return self.merchants is None or merchant_id in self.merchants


@dataclass(frozen=True)
class Settings:
    partners: Mapping[str, Partner] = field(default_factory=dict)
    host_tokens: Mapping[str, str] = field(default_factory=dict)  # merchant_id -> token


def env_name(prefix: str, ident: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9]", "_", ident).upper()


def load_settings(path: Path | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read a settings file (or none) and let the environment supply or override secrets."""
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SettingsError(f"{path}: no such file") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{path}: not valid TOML ({exc})") from None
    try:
        model = _SettingsModel.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SettingsError(f"{path}: {where}: {first['msg']}") from None
    partners: dict[str, Partner] = {}
    for p in model.partners:
        if p.id in partners:
            raise SettingsError(f"{path}: partners: {p.id} is listed twice")
        partners[p.id] = Partner(
            id=p.id,
            secret=env.get(env_name("HOSTSTAND_PARTNER_SECRET_", p.id), p.secret),
            merchants=frozenset(p.merchants) if p.merchants is not None else None,
            basic_user=p.basic_user,
            basic_password=env.get(env_name("HOSTSTAND_PARTNER_PASSWORD_", p.id), p.basic_password),
        )
    tokens: dict[str, str] = {}
    for h in model.hosts:
        token = env.get(env_name("HOSTSTAND_HOST_TOKEN_", h.merchant_id), h.token)
        if token:
            tokens[h.merchant_id] = token
    return Settings(partners=partners, host_tokens=tokens)
