"""Seed 000 §12: every JSON example of the contract validates against the published schemas; and the
catalog's checks refuse bad run requests with the right code before anything is opened."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from rpc.errors import BoxwrightError, ErrorBody, ErrorCode
from rpc.models import tasks as t
from rpc.models.base import Params
from rpc.models.templates import BatchExtractInputs, LoginInputs
from rpc.templates import BATCH_EXTRACT_PAGES, CATALOG, TemplateSpec, check_run, effective_timeout_ms, resolve_mode

SEED = Path(os.environ.get("BOXWRIGHT_SEEDS_DIR", "/work/shared/seeds")) / "000_00afb520eb0fff5b.txt"

# The examples of seed 000, verbatim, each with the model whose schema publishes it.
EXAMPLES: list[tuple[type[BaseModel], str]] = [
    (t.GetRuntimeProfileRequest, "{}"),
    (
        t.RuntimeProfile,
        """{"runtimeVersion": "0.2.0", "limits": {"maxConcurrentRuns": 5, "maxRunTimeoutMs": 900000,
        "maxArtifactInlineBytes": 262144}}""",
    ),
    (t.ListTaskTemplatesRequest, "{}"),
    (
        t.ListTaskTemplatesResponse,
        """{"templates": [{"templateId": "batch_extract_pages", "version": "1.0.0", "name": "批量页面结构化采集",
        "trustLevelSupport": ["local", "remote"], "limits": {"maxUrls": 1000, "maxConcurrency": 5},
        "inputsSchema": { "type": "object" }, "outputsSchema": { "type": "object" }}]}""",
    ),
    (
        t.RunTaskTemplateRequest,
        """{"templateId": "batch_extract_pages", "templateVersion": "1.0.0", "sessionId": "sess_xxx",
        "inputs": {"urls": ["https://example.com/a"]}, "options": {"timeoutMs": 120000, "mode": "auto"}}""",
    ),
    (t.RunTaskTemplateResponse, """{"runId": "run_123", "status": "queued", "createdAt": 1739145600000}"""),
    (
        t.TaskRun,
        """{"runId": "run_123", "templateId": "batch_extract_pages", "status": "succeeded",
        "progress": {"totalSteps": 2, "doneSteps": 2}, "metrics": {"elapsedMs": 3200},
        "result": {"summary": { "total": 2, "succeeded": 2, "failed": 0 },
        "items": [{"url": "https://example.com/a", "title": "Page A", "success": true}]}}""",
    ),
    (t.GetTaskRunRequest, """{ "runId": "run_123" }"""),
    (
        t.TaskRun,
        """{"runId": "run_123", "templateId": "batch_extract_pages", "status": "running",
        "progress": {"totalSteps": 20, "doneSteps": 8}, "metrics": {"elapsedMs": 5230}}""",
    ),
    (
        t.TaskRun,
        """{"runId": "run_123", "templateId": "batch_extract_pages", "status": "partial_success",
        "progress": {"totalSteps": 20, "doneSteps": 20}, "metrics": {"elapsedMs": 18022},
        "result": {"summary": { "total": 10, "succeeded": 9, "failed": 1 }, "items": []},
        "artifacts": [{ "artifactId": "art_1", "type": "json", "size": 12043 }]}""",
    ),
    (
        t.ListTaskRunsRequest,
        """{"status": "running", "templateId": "batch_extract_pages", "limit": 20, "offset": 0}""",
    ),
    (
        t.ListTaskRunsResponse,
        """{"runs": [{"runId": "run_123", "templateId": "batch_extract_pages", "status": "running",
        "createdAt": 1739145600000, "updatedAt": 1739145605230}]}""",
    ),
    (t.CancelTaskRunRequest, """{ "runId": "run_123" }"""),
    (t.CancelTaskRunResponse, """{"cancelRequested": true, "currentStatus": "running"}"""),
    (t.GetArtifactRequest, """{"artifactId": "art_1", "offset": 0, "limit": 262144}"""),
    (
        t.ArtifactChunk,
        """{"artifactId": "art_1", "mimeType": "application/json", "size": 1024, "data": "...base64...",
        "complete": true}""",
    ),
    (t.GetArtifactRequest, """{ "artifactId": "art_2" }"""),
    (
        t.ArtifactChunk,
        """{"artifactId": "art_2", "mimeType": "text/csv", "size": 5242880, "data": "...base64...(前 256KB)...",
        "offset": 0, "bytesReturned": 262144, "complete": false}""",
    ),
    (t.GetArtifactRequest, """{ "artifactId": "art_2", "offset": 262144 }"""),
    (
        ErrorBody,
        """{"error": "step failed", "errorCode": "STEP_EXECUTION_FAILED",
        "recoverHint": "retry with smaller batch size",
        "details": {"runId": "run_123", "failedStep": "navigate",
        "stepErrorCode": "NAVIGATION_TIMEOUT"}}""",
    ),
]


def schema(model: type[BaseModel]) -> dict[str, Any]:
    """What the host publishes: input schemas for requests, output schemas for responses."""
    return model.model_json_schema(mode="validation" if issubclass(model, Params) else "serialization")


@pytest.mark.parametrize(("model", "text"), EXAMPLES, ids=[f"{i}-{m.__name__}" for i, (m, _) in enumerate(EXAMPLES)])
def test_seed_example_validates(model: type[BaseModel], text: str) -> None:
    example = json.loads(text)
    jsonschema.Draft202012Validator(schema(model)).validate(example)
    model.model_validate(example)


def test_sync_answer_has_the_get_task_run_shape() -> None:
    """Seed §4.1: the sync response equals get_task_run's terminal form, so both schemas take it."""
    sync = json.loads(EXAMPLES[6][1])
    jsonschema.validate(sync, schema(t.RunTaskTemplateResponse))
    jsonschema.validate(sync, schema(t.TaskRun))
    with pytest.raises(jsonschema.ValidationError):  # a bare async answer is not a whole run
        jsonschema.validate(json.loads(EXAMPLES[5][1]), schema(t.TaskRun))


def test_every_json_block_of_the_seed_is_covered() -> None:
    if not SEED.exists():
        pytest.skip(f"{SEED} is not here (set BOXWRIGHT_SEEDS_DIR)")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", SEED.read_text(encoding="utf-8"), re.S)]
    covered = [json.loads(text) for _, text in EXAMPLES]
    assert len(blocks) >= 18
    assert [b for b in blocks if b not in covered] == []


def test_runtime_profile_and_catalog_match_the_seed() -> None:
    assert t.RUNTIME_PROFILE.model_dump() == json.loads(EXAMPLES[1][1])
    infos = {tid: spec.info() for tid, spec in CATALOG.items()}
    assert set(infos) == {"batch_extract_pages", "multi_tab_compare", "login_keep_session"}
    batch = infos["batch_extract_pages"]
    assert batch.limits == {"maxUrls": 1000, "maxConcurrency": 5} and batch.trustLevelSupport == ["local", "remote"]
    assert batch.supportsPartialSuccess and batch.partialThreshold == 0.5
    assert infos["multi_tab_compare"].supportsPartialSuccess
    assert not infos["login_keep_session"].supportsPartialSuccess
    for info in infos.values():
        jsonschema.Draft202012Validator.check_schema(info.inputsSchema)
        jsonschema.Draft202012Validator.check_schema(info.outputsSchema)
        jsonschema.validate(info.model_dump(mode="json"), schema(t.TemplateInfo))
    # The seed's run request inputs are valid batch inputs; seed 001 §5 defaults apply.
    inputs = BatchExtractInputs.model_validate(json.loads(EXAMPLES[4][1])["inputs"])
    assert (inputs.concurrency, inputs.extract.pageInfo, inputs.extract.content) == (3, True, True)
    assert (inputs.extract.maxElements, inputs.extract.maxContentLength) == (50, 4000)
    jsonschema.validate(json.loads(EXAMPLES[4][1])["inputs"], infos["batch_extract_pages"].inputsSchema)


def _refusal(template_id: str, inputs: dict[str, Any], **kw: Any) -> BoxwrightError:
    with pytest.raises(BoxwrightError) as caught:
        check_run(template_id, kw.get("version"), inputs, kw.get("timeout_ms"), kw.get("trust", "local"))
    assert caught.value.hint  # every refusal says what to do next
    return caught.value


URL = "https://example.com/a"


@pytest.mark.parametrize(
    ("template_id", "inputs", "kw", "code", "field"),
    [
        ("no_such_template", {"urls": [URL]}, {}, ErrorCode.TEMPLATE_NOT_FOUND, None),
        ("batch_extract_pages", {"urls": [URL]}, {"version": "2.0.0"}, ErrorCode.TEMPLATE_VERSION_UNSUPPORTED, None),
        ("batch_extract_pages", {"urls": [URL]}, {"version": "1.1"}, ErrorCode.TEMPLATE_VERSION_UNSUPPORTED, None),
        ("batch_extract_pages", {"urls": [URL]}, {"version": "latest"}, ErrorCode.TEMPLATE_VERSION_UNSUPPORTED, None),
        ("batch_extract_pages", {"urls": []}, {}, ErrorCode.INVALID_PARAMETER, "inputs.urls"),
        ("batch_extract_pages", {"urls": [URL] * 1001}, {}, ErrorCode.INVALID_PARAMETER, "inputs.urls"),
        # 1000 of the longest URLs: an 8 MB request the HTTP server refused with no word about which field.
        (
            "batch_extract_pages",
            {"urls": [URL + "?" + "q" * 8000] * 1000},
            {},
            ErrorCode.INVALID_PARAMETER,
            "inputs.urls",
        ),
        (
            "batch_extract_pages",
            {"urls": [URL, "file:///etc/passwd"]},
            {},
            ErrorCode.INVALID_PARAMETER,
            "inputs.urls.1",
        ),
        ("batch_extract_pages", {"urls": ["javascript:alert(1)"]}, {}, ErrorCode.INVALID_PARAMETER, "inputs.urls.0"),
        ("batch_extract_pages", {"urls": ["example.com"]}, {}, ErrorCode.INVALID_PARAMETER, "inputs.urls.0"),
        (
            "batch_extract_pages",
            {"urls": [URL], "concurrency": 0},
            {},
            ErrorCode.INVALID_PARAMETER,
            "inputs.concurrency",
        ),
        (
            "batch_extract_pages",
            {"urls": [URL], "concurrency": 6},
            {},
            ErrorCode.INVALID_PARAMETER,
            "inputs.concurrency",
        ),
        ("batch_extract_pages", {"urls": [URL], "extra": 1}, {}, ErrorCode.INVALID_PARAMETER, "inputs.extra"),
        ("batch_extract_pages", {"url": URL}, {}, ErrorCode.INVALID_PARAMETER, "inputs.urls"),
        ("multi_tab_compare", {"urls": [URL]}, {}, ErrorCode.INVALID_PARAMETER, "inputs.urls"),
        (
            "login_keep_session",
            {"loginUrl": URL, "fields": [{"value": "x"}], "success": {"textPresent": "Hi"}},
            {},
            ErrorCode.INVALID_PARAMETER,
            "inputs.fields.0",
        ),
        (
            "login_keep_session",
            {"loginUrl": URL, "fields": [{"label": "User", "value": "x"}], "success": {}},
            {},
            ErrorCode.INVALID_PARAMETER,
            "inputs.success",
        ),
    ],
)
def test_bad_run_requests_are_refused(
    template_id: str, inputs: dict[str, Any], kw: dict[str, Any], code: ErrorCode, field: str | None
) -> None:
    refused = _refusal(template_id, inputs, **kw)
    assert refused.code is code
    if field is not None:
        assert field in [e["field"] for e in refused.details["errors"]]


def test_timeouts() -> None:
    # Above the runtime maximum is a bad request (the MCP and RPC models both say so)…
    with pytest.raises(ValueError, match="timeoutMs"):
        t.RunOptions.model_validate({"timeoutMs": t.MAX_RUN_TIMEOUT_MS + 1})
    with pytest.raises(ValueError, match="runTimeoutMs"):
        t.TaskStartParams.model_validate({"templateId": "x", "runTimeoutMs": 0})
    # …below it, seed §10's min() rule applies, and no timeout means the template's maximum.
    login = CATALOG["login_keep_session"]
    assert effective_timeout_ms(login, None) == login.max_timeout_ms == 300_000
    assert effective_timeout_ms(login, 900_000) == 300_000
    assert effective_timeout_ms(BATCH_EXTRACT_PAGES, 5_000) == 5_000
    assert effective_timeout_ms(BATCH_EXTRACT_PAGES, None) == t.MAX_RUN_TIMEOUT_MS


def test_trust_level_is_enforced() -> None:
    local_only = TemplateSpec(
        template_id="local_thing",
        version="1.0.0",
        name="x",
        description="x",
        inputs=BatchExtractInputs,
        outputs=BatchExtractInputs,
        limits={},
        trust_levels=("local",),
    )
    catalog = {"local_thing": local_only}
    with pytest.raises(BoxwrightError) as caught:
        check_run("local_thing", None, {"urls": [URL]}, None, "remote", catalog)
    assert caught.value.code is ErrorCode.TRUST_LEVEL_NOT_ALLOWED
    assert check_run("local_thing", "1", {"urls": [URL]}, None, "local", catalog).spec is local_only


def test_auto_mode_and_secrets_in_errors() -> None:
    few = BatchExtractInputs(urls=[URL] * 10)
    many = BatchExtractInputs(urls=[URL] * 11)
    assert resolve_mode(BATCH_EXTRACT_PAGES, "auto", few) == "sync"
    assert resolve_mode(BATCH_EXTRACT_PAGES, "auto", many) == "async"
    assert resolve_mode(BATCH_EXTRACT_PAGES, "async", few) == "async"
    # A refused login never echoes the field values it was given.
    refused = _refusal(
        "login_keep_session",
        {"loginUrl": "ftp://x", "fields": [{"selector": "#p", "value": "s3cret-Value", "extra": 1}], "success": {}},
    )
    assert "s3cret-Value" not in json.dumps(refused.to_body().model_dump(mode="json"))
    assert "s3cret-Value" not in repr(
        LoginInputs.model_validate(
            {"loginUrl": URL, "fields": [{"selector": "#p", "value": "s3cret-Value"}], "success": {"textPresent": "x"}}
        )
    )
