"""The list of graders' comments on the report and unit pages, rendered in Python: a report lists up
to 500 comments, and the template loop that rendered them took most of the page's time."""

from __future__ import annotations

from html import escape  # Django's escape less its lazy-string wrapper: the same text, a fraction of the cost
from typing import Any

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import normalize_newlines

register = template.Library()


@register.filter
def comment_items(comments: list[dict[str, Any]]) -> SafeString:
    """One <li> per comment ({grader, text, when, external_id?, url?}): what the template loop wrote,
    the unit linked when there is a url, the time as "Y-m-d H:i" in the current time zone, line breaks
    kept (as |linebreaksbr); every value escaped."""
    zone = timezone.get_current_timezone()
    items = []
    for c in comments:
        unit = ""
        if c.get("url"):
            unit = f'<a href="{escape(str(c["url"]))}">{escape(str(c.get("external_id", "")))}</a> · '
        when = c["when"].astimezone(zone).strftime("%Y-%m-%d %H:%M") if c.get("when") else ""
        text = escape(normalize_newlines(c["text"])).replace("\n", "<br>")
        grader = escape(str(c["grader"]))
        items.append(f'<li>{unit}<strong>{grader}</strong>\n      <span class="muted">{when}</span><p>{text}</p></li>')
    return mark_safe("".join(items))  # noqa: S308 - every value above is escaped
