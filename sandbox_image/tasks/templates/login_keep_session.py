"""login_keep_session: open a login page, fill it, submit, verify — and keep the logged-in session.

Steps: open (the inputs' selectors parsed by the browser first, so a typo in the last one fails the run
before the site is visited), one fill per field, submit, verify; the first failure ends the run (atomic: succeeded or
failed, never partial_success) and the steps after it are skipped. On success the session stays
open with the logged-in tab active (its sandbox is kept by the host); on failure a session the run
created is closed. Field values are never echoed: step names use selectors and labels, and any value
found in an error message, or in the final address and title (a form sent by GET puts the values in the
address; a site may greet the user by name), is replaced by a mask before it is stored.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from urllib.parse import quote, quote_plus

from rpc.errors import BoxwrightError
from rpc.models.tasks import ResultSummary
from rpc.models.templates import LoginField, LoginInputs, LoginOutput
from rpc.templates import LOGIN_KEEP_SESSION
from sandbox_image.browser.elements import PASSWORD_MASK
from sandbox_image.browser.tab import Tab
from sandbox_image.tasks.context import RunContext
from sandbox_image.tasks.executor import ActionError
from sandbox_image.tasks.templates.base import Template

OPEN_STABLE_TIMEOUT_MS = 5_000
# Values this short are only masked when marked secret (masking "a" everywhere would garble messages).
MIN_MASKED_LENGTH = 4


def describe(field: LoginField) -> str:
    return field.selector if field.selector is not None else f"label {field.label!r}"


def plan(inputs: LoginInputs) -> list[str]:
    return ["open", *(f"fill {describe(f)}" for f in inputs.fields), "submit", "verify"]


def selectors(inputs: LoginInputs) -> list[tuple[str, str]]:
    """Every CSS selector of the inputs, by the field that gives it as the model names it (`fields.1.selector`)."""
    named = [(f"fields.{i}.selector", f.selector) for i, f in enumerate(inputs.fields) if f.selector is not None]
    if inputs.submit is not None and inputs.submit.selector is not None:
        named.append(("submit.selector", inputs.submit.selector))
    if inputs.success.elementPresent is not None:
        named.append(("success.elementPresent", inputs.success.elementPresent))
    return named


def _secrets(inputs: LoginInputs) -> list[str]:
    """Each value as typed and as a form or an address encodes it (a GET form's values land in the URL)."""
    values = {f.value for f in inputs.fields if f.value and (f.secret or len(f.value) >= MIN_MASKED_LENGTH)}
    found = values | {quote_plus(v) for v in values} | {quote(v, safe="") for v in values}
    return sorted(found, key=len, reverse=True)  # longest first: a value inside another is masked with it


def mask(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, PASSWORD_MASK)
    return text


def scrub(error: BoxwrightError, secrets: list[str]) -> BoxwrightError:
    """The error with every field value replaced by a mask, in its message, hint and details."""
    clean = partial(mask, secrets=secrets)
    details = json.loads(clean(json.dumps(dict(error.details), ensure_ascii=False)))
    hint = clean(error.hint) if error.hint else error.hint
    return BoxwrightError(error.code, clean(error.message), hint=hint, details=details)


async def execute(ctx: RunContext[LoginInputs]) -> None:
    inputs, browser = ctx.inputs, ctx.browser
    secrets = _secrets(inputs)
    tab: Tab | None = None

    async def open_page() -> None:
        nonlocal tab
        tab = await browser.open_tab(activate=True)
        ctx.notes["tab"] = tab
        await browser.check_selectors(tab, selectors(inputs))  # a typo fails the run before the site is visited
        await browser.navigate(tab, inputs.loginUrl, inputs.navigationTimeoutMs)
        await browser.wait_for_stable(tab, OPEN_STABLE_TIMEOUT_MS)

    async def fill(field: LoginField) -> None:
        assert tab is not None
        await browser.fill(tab, field, inputs.actionTimeoutMs)

    async def submit() -> None:
        assert tab is not None
        await browser.submit(tab, inputs.submit, inputs.actionTimeoutMs)

    async def verify() -> None:
        assert tab is not None
        await browser.verify(tab, inputs.success, inputs.verifyTimeoutMs)
        ctx.notes["finalUrl"], ctx.notes["title"] = mask(tab.url, secrets), mask(await tab.title(), secrets)

    async def guarded(body: Callable[[], Awaitable[None]]) -> None:
        try:
            await body()
        except ActionError as exc:
            raise ActionError(exc.action, scrub(exc.error, secrets)) from None
        except BoxwrightError as exc:
            raise scrub(exc, secrets) from None

    bodies: list[Callable[[], Awaitable[None]]] = [
        open_page,
        *(partial(fill, f) for f in inputs.fields),
        submit,
        verify,
    ]
    for step, body in zip(ctx.run.steps, bodies, strict=True):
        await ctx.executor.execute(step, partial(guarded, body))
        if step.status != "succeeded":
            break
    if tab is not None and any(s.status != "succeeded" for s in ctx.run.steps):
        await browser.close_tab(tab)  # not logged in: nothing worth keeping in this tab


def output(ctx: RunContext[LoginInputs]) -> LoginOutput:
    steps = ctx.run.steps
    logged_in = all(s.status == "succeeded" for s in steps)
    tab: Tab | None = ctx.notes.get("tab")
    summary = ResultSummary(
        total=len(steps),
        succeeded=sum(1 for s in steps if s.status == "succeeded"),
        failed=sum(1 for s in steps if s.status == "failed"),
        skipped=sum(1 for s in steps if s.status == "skipped"),
    )
    return LoginOutput(
        summary=summary,
        items=[s.info() for s in steps],
        loggedIn=logged_in,
        sessionId=ctx.run.session_id if logged_in else None,
        tabId=tab.id if logged_in and tab is not None else None,
        finalUrl=ctx.notes.get("finalUrl"),
        title=ctx.notes.get("title"),
    )


TEMPLATE = Template(spec=LOGIN_KEEP_SESSION, plan=plan, execute=execute, output=output)
