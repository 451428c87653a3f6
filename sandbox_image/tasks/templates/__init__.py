"""The templates this agent runs, by templateId (their catalog entries are in rpc.templates)."""

from __future__ import annotations

from sandbox_image.tasks.templates import batch_extract_pages, login_keep_session, multi_tab_compare
from sandbox_image.tasks.templates.base import Template

TEMPLATES: dict[str, Template] = {
    t.spec.template_id: t
    for t in (batch_extract_pages.TEMPLATE, multi_tab_compare.TEMPLATE, login_keep_session.TEMPLATE)
}

__all__ = ["TEMPLATES", "Template"]
