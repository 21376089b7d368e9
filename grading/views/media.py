"""Candidate media, served under the candidate's opaque public id only.

A media file's own name may carry external ids (`q1-c11.wav` tells which query and which system a
clip came from). Graders reach a candidate's file only through /media/c/<public id>.<ext>, and the
answer names the file by the public id too (Content-Disposition). Whoever has no role in the
candidate's campaign gets 404, as for a candidate that does not exist.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest

from grading import selectors
from grading.models.items import media_suffix


@login_required
def candidate_media(request: HttpRequest, name: str) -> FileResponse:
    public_id, _, _ = name.partition(".")
    candidate = selectors.candidate_with_media(public_id=public_id)
    if candidate is None or f"{public_id}{media_suffix(candidate.media_file.name)}" != name:
        raise Http404("No media matches the given query.")
    user = request.user
    if not (user.is_staff or selectors.user_has_role(user=user, campaign_id=candidate.campaign_id)):
        raise Http404("No media matches the given query.")
    try:
        handle = candidate.media_file.open("rb")
    except FileNotFoundError:
        raise Http404("The media file is missing from storage.") from None
    response = FileResponse(handle, filename=name)
    response["Cache-Control"] = "private, max-age=3600"
    return response
