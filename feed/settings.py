"""Server settings: the partners that may call us, the host tablets' tokens, the admin token.

Secrets come from the environment (HOSTSTAND_PARTNER_SECRET_<ID>, HOSTSTAND_HOST_TOKEN_<ID>,
HOSTSTAND_PARTNER_PASSWORD_<ID>, HOSTSTAND_ADMIN_TOKEN) or from the file; files in the repo
carry sample secrets only.
pydantic stays here: `load_settings` turns the file into plain values.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MIN_SECRET = 16  # characters of a webhook secret, in the file or the environment
MIN_TOKEN = 16  # characters of a host's or the admin's bearer token, file or environment


class SettingsError(Exception):
    """A settings file that cannot be used; one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _PartnerModel(_Strict):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    secret: str | None = Field(default=None, min_length=MIN_SECRET)
    merchants: list[str] | None = None  # None: every restaurant the server runs
    basic_user: str | None = None
    basic_password: str | None = Field(default=None, min_length=1)  # "": anybody signs in
    notify_url: str | None = Field(default=None, pattern=r"^https?://")
    notify_token: str | None = None


class _HostModel(_Strict):
    merchant_id: str = Field(min_length=1)
    token: str | None = Field(default=None, min_length=MIN_TOKEN)


class _DestinationModel(_Strict):
    kind: Literal["directory", "http"]
    path: str | None = None  # directory
    url: str | None = Field(default=None, pattern=r"^https?://")  # http: files go to url/<name>
    method: Literal["PUT", "POST"] = "PUT"
    auth_header: str = "Authorization"
    auth_value: str | None = None  # e.g. "Bearer ..."; or from the environment:
    auth_value_env: str | None = None


class _ExportModel(_Strict):
    interval_minutes: int = Field(default=60, ge=1, le=24 * 60)
    days: int = Field(default=30, ge=1, le=366)
    shards: int = Field(default=1, ge=1, le=10_000)
    gzip: bool = False
    staging: str | None = None  # where feeds are written before delivery
    retry_base_seconds: float = Field(default=1.0, gt=0, le=60)  # first back-off, doubling
    coalesce_seconds: float = Field(default=10.0, ge=0, le=240)  # one replace per restaurant
    destinations: list[_DestinationModel] = []


class _HealthModel(_Strict):
    # /healthz turns 503 once the oldest undelivered partner message is older than this.
    max_backlog_seconds: float = Field(default=600.0, gt=0, le=7 * 24 * 3600)


class _RetentionModel(_Strict):
    # Records that only answer a retry (a webhook's event id, a partner's reservation id, a
    # CreateBooking token, a host's Idempotency-Key), delivered messages and export records
    # are removed this many days after the moment they answer for (store.retention).
    keep_days: int = Field(default=30, ge=1, le=3650)


class _HttpModel(_Strict):
    # A connection's deadlines and the cap on open connections (feed.http.deadlines).
    head_seconds: float = Field(default=15.0, gt=0, le=300)
    body_seconds: float = Field(default=60.0, gt=0, le=3600)
    keep_alive_seconds: int = Field(default=5, ge=1, le=300)
    max_connections: int = Field(default=2000, ge=2, le=1_000_000)


class _SettingsModel(_Strict):
    # The operator's bearer token for /api/v1/admin/... (a reload); none: no admin routes.
    admin_token: str | None = Field(default=None, min_length=MIN_TOKEN)
    partners: list[_PartnerModel] = []
    hosts: list[_HostModel] = []
    export: _ExportModel = _ExportModel()
    health: _HealthModel = _HealthModel()
    retention: _RetentionModel = _RetentionModel()
    http: _HttpModel = _HttpModel()


@dataclass(frozen=True)
class Partner:
    id: str
    secret: str | None  # webhook signing secret; None: this partner sends no webhooks
    merchants: frozenset[str] | None
    basic_user: str | None = None
    basic_password: str | None = None
    notify_url: str | None = None  # base URL for booking notifications and availability replaces
    notify_token: str | None = None  # sent as a Bearer token with them

    def may_use(self, merchant_id: str) -> bool:
        return self.merchants is None or merchant_id in self.merchants


@dataclass(frozen=True)
class Destination:
    kind: str  # "directory" or "http"
    path: str | None = None
    url: str | None = None
    method: str = "PUT"
    headers: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.path}" if self.kind == "directory" else f"{self.method} {self.url}"


@dataclass(frozen=True)
class ExportSettings:
    interval_minutes: int = 60
    days: int = 30
    shards: int = 1
    gzip: bool = False
    staging: str | None = None
    destinations: tuple[Destination, ...] = ()
    retry_base_seconds: float = 1.0  # uploads and partner notifications back off from here
    coalesce_seconds: float = 10.0  # a restaurant sends at most one replace this often


@dataclass(frozen=True)
class HealthSettings:
    max_backlog_seconds: float = 600.0  # /healthz is 503 past this oldest pending message age


@dataclass(frozen=True)
class RetentionSettings:
    keep_days: int = 30  # what only answers retries is removed this long after it matters


@dataclass(frozen=True)
class HttpSettings:
    head_seconds: float = 15.0  # a request's line and headers must arrive within this
    body_seconds: float = 60.0  # its body within this of its headers
    keep_alive_seconds: int = 5  # an idle kept-alive connection is closed after this
    max_connections: int = 2000  # past this many open at once, a new one is refused


@dataclass(frozen=True)
class Settings:
    partners: Mapping[str, Partner] = field(default_factory=dict)
    host_tokens: Mapping[str, str] = field(default_factory=dict)  # merchant_id -> token
    export: ExportSettings = ExportSettings()
    health: HealthSettings = HealthSettings()
    admin_token: str | None = None  # bearer token of the admin routes (reload)
    retention: RetentionSettings = RetentionSettings()  # [retention]: how long retry records stay
    http: HttpSettings = HttpSettings()  # [http]: a connection's deadlines, the connection cap


ADMIN_TOKEN_ENV = "HOSTSTAND_ADMIN_TOKEN"
SETTINGS_KEYS = frozenset(_SettingsModel.model_fields)  # a file with these is a settings file


def env_name(prefix: str, ident: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9]", "_", ident).upper()


def _secret(env: Mapping[str, str], name: str, in_file: str | None, least: int) -> str | None:
    """The environment's `name` if it is set, else the file's value. One set in the
    environment meets the file's rule: an empty HOSTSTAND_PARTNER_SECRET_X= (a deployment
    template left unfilled) made every webhook signed with an empty key good, an empty
    password let anybody call v3 as that partner, and HOSTSTAND_ADMIN_TOKEN=abc guarded the
    admin routes with three characters. Its value is never said."""
    if name not in env:
        return in_file
    given = env[name]
    if len(given) < least:
        raise SettingsError(
            f"{name} is set but {'empty' if not given else 'too short'}: it needs at least"
            f" {least} character(s) (unset it to use the settings file's)"
        )
    return given


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
        raise SettingsError(_problem_lines(exc, path)[0]) from None
    problems = _cross_field(model, path)
    if problems:
        raise SettingsError(problems[0])
    partners: dict[str, Partner] = {}
    for p in model.partners:
        partners[p.id] = Partner(
            id=p.id,
            secret=_secret(env, env_name("HOSTSTAND_PARTNER_SECRET_", p.id), p.secret, MIN_SECRET),
            merchants=frozenset(p.merchants) if p.merchants is not None else None,
            basic_user=p.basic_user,
            basic_password=_secret(
                env, env_name("HOSTSTAND_PARTNER_PASSWORD_", p.id), p.basic_password, 1
            ),
            notify_url=env.get(env_name("HOSTSTAND_PARTNER_NOTIFY_URL_", p.id), p.notify_url),
            notify_token=env.get(env_name("HOSTSTAND_PARTNER_NOTIFY_TOKEN_", p.id), p.notify_token),
        )
    tokens: dict[str, str] = {}
    for h in model.hosts:
        token = _secret(env, env_name("HOSTSTAND_HOST_TOKEN_", h.merchant_id), h.token, MIN_TOKEN)
        if token:
            tokens[h.merchant_id] = token
    destinations: list[Destination] = []
    for d in model.export.destinations:
        value = env.get(d.auth_value_env, d.auth_value) if d.auth_value_env else d.auth_value
        headers = {d.auth_header: value} if value else {}
        destinations.append(Destination(d.kind, d.path, d.url, d.method, headers))
    e = model.export
    export = ExportSettings(
        e.interval_minutes,
        e.days,
        e.shards,
        e.gzip,
        e.staging,
        tuple(destinations),
        e.retry_base_seconds,
        e.coalesce_seconds,
    )
    health = HealthSettings(model.health.max_backlog_seconds)
    admin = _secret(env, ADMIN_TOKEN_ENV, model.admin_token, MIN_TOKEN)
    return Settings(
        partners=partners,
        host_tokens=tokens,
        export=export,
        health=health,
        admin_token=admin,
        retention=RetentionSettings(model.retention.keep_days),
        http=HttpSettings(**model.http.model_dump()),
    )


def unreachable(settings: Settings, served: Sequence[str]) -> list[str]:
    """What in these settings does not meet the restaurants a server runs, one line each: a
    restaurant with no host token (its tablet cannot sign in, and says only "wrong token"),
    and a [[hosts]] entry or a partner's `merchants` naming none of them (a misspelt id,
    which leaves the restaurant it meant without a tablet or that partner)."""
    lines: list[str] = []
    for merchant in served:
        if merchant not in settings.host_tokens:
            lines.append(
                f'no host token for {merchant} (a [[hosts]] entry, merchant_id = "{merchant}",'
                f" its token there or in {env_name('HOSTSTAND_HOST_TOKEN_', merchant)}): its"
                " tablet cannot sign in"
            )
    for merchant in settings.host_tokens:
        if merchant not in served:
            lines.append(f"[[hosts]] names {merchant}, none of the restaurants here")
    for partner in settings.partners.values():
        for merchant in sorted(partner.merchants or ()):
            if merchant not in served:
                lines.append(
                    f"partner {partner.id}'s merchants name {merchant}, none of the"
                    " restaurants here"
                )
    return lines


PARTNER_ENV = (
    "HOSTSTAND_PARTNER_SECRET_",
    "HOSTSTAND_PARTNER_PASSWORD_",
    "HOSTSTAND_PARTNER_NOTIFY_URL_",
    "HOSTSTAND_PARTNER_NOTIFY_TOKEN_",
)
HOST_ENV = "HOSTSTAND_HOST_TOKEN_"


def unread_environment(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """The partners' and hosts' variables set in the environment that name no [[partners]] or
    [[hosts]] entry of these settings, one line each: nothing reads them. A misspelt one
    (HOSTSTAND_PARTNER_SECRET_TABLEFINDR) left its partner without the secret meant for it,
    every webhook refused "unknown partner or bad signature", with not a word at start. Their
    values are never said."""
    env = os.environ if environ is None else environ
    partners = {env_name("", p): p for p in settings.partners}
    hosts = {env_name("", m) for m in settings.host_tokens}
    known = ", ".join(sorted(settings.partners)) or "none"
    lines: list[str] = []
    for name in sorted(env):
        prefix = next((p for p in PARTNER_ENV if name.startswith(p)), None)
        if prefix is not None and name[len(prefix) :] not in partners:
            lines.append(
                f"{name} is set but names no partner of the settings ([[partners]] ids:"
                f" {known}): it is not read"
            )
        elif name.startswith(HOST_ENV) and name[len(HOST_ENV) :] not in hosts:
            lines.append(
                f"{name} is set but names no [[hosts]] entry of the settings: it is not read"
                " (a [[hosts]] entry with that restaurant's merchant_id takes its token from it)"
            )
    return lines


def settings_problems(path: Path) -> list[str]:
    """Every problem of a settings file, one line each ("file: field: reason"); none: it
    loads. `load_settings` stops at the first; `hoststand check` wants them all."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{path}: no such file"]
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: cannot read the file ({exc})"]
    except tomllib.TOMLDecodeError as exc:
        return [f"{path}: not valid TOML ({exc})"]
    try:
        _SettingsModel.model_validate(data)
    except ValidationError as exc:
        return _problem_lines(exc, path)
    return _cross_field(_SettingsModel.model_validate(data), path)


def _problem_lines(exc: ValidationError, path: Path | None) -> list[str]:
    """One line per problem, "file: field: reason"; a misspelt key is an unknown key with
    the allowed one it is closest to, as in a restaurant file."""
    lines = []
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        reason = str(e["msg"])
        if e["type"] == "extra_forbidden":
            reason = "unknown key" + _did_you_mean(loc)
        lines.append(f"{path}: {'.'.join(str(p) for p in loc) or '(file)'}: {reason}")
    return lines


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    model: type[BaseModel] | None = _SettingsModel
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        annotation = model.model_fields[part].annotation if part in model.model_fields else None
        inner = getattr(annotation, "__args__", (annotation,))  # list[_PartnerModel]
        model = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
    if model is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _cross_field(model: _SettingsModel, path: Path | None) -> list[str]:
    """The problems the schema alone does not catch, in the file's order."""
    problems: list[str] = []
    seen: set[str] = set()
    for p in model.partners:
        if p.id in seen:
            problems.append(f"{path}: partners: {p.id} is listed twice")
        seen.add(p.id)
    # A second entry for a restaurant would silently replace the first one's token: the
    # tablet signed in with the first would be locked out with no word of why.
    hosts: set[str] = set()
    for h in model.hosts:
        if h.merchant_id in hosts:
            problems.append(f"{path}: hosts: {h.merchant_id} is listed twice")
        hosts.add(h.merchant_id)
    for i, d in enumerate(model.export.destinations):
        where = f"{path}: export.destinations[{i}]"
        if d.kind == "directory" and not d.path:
            problems.append(f"{where}.path: a directory destination needs a path")
        if d.kind == "http" and not d.url:
            problems.append(f"{where}.url: an http destination needs a url")
    return problems
