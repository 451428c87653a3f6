"""The template catalog, and the checks every run request passes before anything is opened.

Both sides use it: the host answers list_task_templates and refuses bad requests before it makes a
sandbox; the agent checks again before it opens a session or a tab. What a template *does* lives
in the agent (sandbox_image/tasks/templates/); what it *is* — id, version, trust levels, limits,
schemas, timeouts, the partial-success rule — lives here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from rpc.errors import BoxwrightError, ErrorCode, FieldError, field_errors, invalid_fields
from rpc.models import templates as t
from rpc.models.base import Params
from rpc.models.tasks import (
    DEFAULT_PARTIAL_THRESHOLD,
    MAX_RUN_TIMEOUT_MS,
    RunMode,
    TemplateInfo,
    TrustLevel,
)

# auto mode runs a batch synchronously up to this many URLs (seed 001 §6.1).
AUTO_SYNC_MAX_URLS = 10
_SEMVER = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")


@dataclass(frozen=True)
class TemplateSpec:
    template_id: str
    version: str
    name: str
    description: str
    inputs: type[Params]
    outputs: type[BaseModel]
    limits: dict[str, int]
    trust_levels: tuple[TrustLevel, ...] = ("local", "remote")
    supports_partial_success: bool = False
    partial_threshold: float = DEFAULT_PARTIAL_THRESHOLD
    max_timeout_ms: int = MAX_RUN_TIMEOUT_MS
    # On success, keep the session the run created (and the host the sandbox it made for the run).
    keeps_session: bool = False
    # How auto mode resolves for these inputs.
    auto_mode: Callable[[Any], Literal["sync", "async"]] = field(default=lambda _inputs: "sync")

    def info(self) -> TemplateInfo:
        return TemplateInfo(
            templateId=self.template_id,
            version=self.version,
            name=self.name,
            description=self.description,
            trustLevelSupport=list(self.trust_levels),
            limits=dict(self.limits),
            inputsSchema=self.inputs.model_json_schema(),
            outputsSchema=self.outputs.model_json_schema(mode="serialization"),
            supportsPartialSuccess=self.supports_partial_success,
            partialThreshold=self.partial_threshold if self.supports_partial_success else None,
            maxTimeoutMs=self.max_timeout_ms,
        )

    def supports_version(self, requested: str) -> bool:
        """Caret semantics: same major, and not newer than ours ("1", "1.0" and "1.0.0" all name 1.0.0)."""
        ours, theirs = _SEMVER.match(self.version), _SEMVER.match(requested.strip())
        if ours is None or theirs is None:
            return False
        mine = tuple(int(g or 0) for g in ours.groups())
        wanted = tuple(int(g or 0) for g in theirs.groups())
        return wanted[0] == mine[0] and wanted <= mine


def _batch_mode(inputs: t.BatchExtractInputs) -> Literal["sync", "async"]:
    return "sync" if len(inputs.urls) <= AUTO_SYNC_MAX_URLS else "async"


BATCH_EXTRACT_PAGES = TemplateSpec(
    template_id="batch_extract_pages",
    version="1.0.0",
    name="Batch structured page extraction",
    description="Open each URL in its own tab (a sliding window of concurrency tabs), wait for it to settle, "
    "and read its page info and main content; one immediate retry on NAVIGATION_TIMEOUT or PAGE_CRASHED. "
    "Items come back in input order; partial_success when at least half the URLs succeed.",
    inputs=t.BatchExtractInputs,
    outputs=t.BatchExtractOutput,
    limits={"maxUrls": t.MAX_BATCH_URLS, "maxConcurrency": t.MAX_BATCH_CONCURRENCY},
    supports_partial_success=True,
    auto_mode=_batch_mode,
)
MULTI_TAB_COMPARE = TemplateSpec(
    template_id="multi_tab_compare",
    version="1.0.0",
    name="Compare pages side by side",
    description="Open 2–10 URLs side by side in tabs of one session, read each page's info and content, and "
    "compare them: shared and differing headings, titles, prices and numbers, word counts.",
    inputs=t.CompareInputs,
    outputs=t.CompareOutput,
    limits={"minUrls": t.MIN_COMPARE_URLS, "maxUrls": t.MAX_COMPARE_URLS},
    supports_partial_success=True,
    max_timeout_ms=300_000,
)
LOGIN_KEEP_SESSION = TemplateSpec(
    template_id="login_keep_session",
    version="1.0.0",
    name="Log in and keep the session",
    description="Open a login page, fill the fields (by CSS selector or label), submit, and verify success by URL "
    "pattern, text or element; the logged-in session (and its sandbox) stays for later calls. Atomic: "
    "succeeded or failed. Field values never appear in results, logs or artifacts.",
    inputs=t.LoginInputs,
    outputs=t.LoginOutput,
    limits={"maxFields": t.MAX_LOGIN_FIELDS},
    supports_partial_success=False,
    max_timeout_ms=300_000,
    keeps_session=True,
)

CATALOG: dict[str, TemplateSpec] = {
    spec.template_id: spec for spec in (BATCH_EXTRACT_PAGES, MULTI_TAB_COMPARE, LOGIN_KEEP_SESSION)
}
INPUTS_HINT = "fix the inputs named in details.errors; list_task_templates shows each template's inputsSchema"


def resolve(template_id: str, version: str | None = None, catalog: dict[str, TemplateSpec] = CATALOG) -> TemplateSpec:
    """The template, or TEMPLATE_NOT_FOUND / TEMPLATE_VERSION_UNSUPPORTED."""
    spec = catalog.get(template_id)
    if spec is None:
        raise BoxwrightError(
            ErrorCode.TEMPLATE_NOT_FOUND,
            f"no task template {template_id!r}",
            details={"templateId": template_id, "templates": sorted(catalog)},
        )
    if version is not None and not spec.supports_version(version):
        raise BoxwrightError(
            ErrorCode.TEMPLATE_VERSION_UNSUPPORTED,
            f"{template_id} {version!r} is not supported (this runtime has {spec.version})",
            hint=f"use templateVersion {spec.version!r}, or omit it",
            details={"templateId": template_id, "requested": version, "supportedVersions": [spec.version]},
        )
    return spec


def check_trust(spec: TemplateSpec, trust: TrustLevel) -> None:
    if trust not in spec.trust_levels:
        raise BoxwrightError(
            ErrorCode.TRUST_LEVEL_NOT_ALLOWED,
            f"{spec.template_id} may not run for a {trust} caller (allowed: {', '.join(spec.trust_levels)})",
            details={"templateId": spec.template_id, "trustLevel": trust, "trustLevelSupport": list(spec.trust_levels)},
        )


def parse_inputs(spec: TemplateSpec, inputs: dict[str, Any]) -> Params:
    """The typed inputs, or INVALID_PARAMETER naming each bad field as inputs.<path> (values never echoed)."""
    try:
        return spec.inputs.model_validate(inputs)
    except ValidationError as exc:
        errors = [FieldError(field=f"inputs.{e['field']}", message=e["message"]) for e in field_errors(exc)]
        names = ", ".join(dict.fromkeys(e["field"] for e in errors))
        raise invalid_fields(
            errors, f"invalid inputs for {spec.template_id}: {names}", hint=INPUTS_HINT, templateId=spec.template_id
        ) from None


def effective_timeout_ms(spec: TemplateSpec, requested: int | None) -> int:
    """Seed 000 §10: min(options.timeoutMs, template maxTimeoutMs, runtime maxRunTimeoutMs); default the template's."""
    cap = min(spec.max_timeout_ms, MAX_RUN_TIMEOUT_MS)
    return cap if requested is None else min(requested, cap)


def resolve_mode(spec: TemplateSpec, mode: RunMode, inputs: Params) -> Literal["sync", "async"]:
    return spec.auto_mode(inputs) if mode == "auto" else mode


@dataclass(frozen=True)
class CheckedRun:
    spec: TemplateSpec
    inputs: Params
    timeout_ms: int


def check_run(
    template_id: str,
    version: str | None,
    inputs: dict[str, Any],
    timeout_ms: int | None,
    trust: TrustLevel,
    catalog: dict[str, TemplateSpec] = CATALOG,
) -> CheckedRun:
    """Everything that can be refused before a sandbox, session or tab exists, in the order a caller fixes it."""
    spec = resolve(template_id, version, catalog)
    check_trust(spec, trust)
    return CheckedRun(spec, parse_inputs(spec, inputs), effective_timeout_ms(spec, timeout_ms))
