"""The grading REST API. Each view: validate with an input serializer, call one service or
selector, serialize the output. Errors come back as {code, detail, field, value} (see errors.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from django.contrib.auth import authenticate
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from evalutron.limits import TokenThrottle
from grading import selectors, selectors_organizer
from grading.api import serializers as s
from grading.api.base import GradingAPIView, TolerantJSONParser, error_body, validated
from grading.api.fast_events import event_input_fast
from grading.errors import GradingError, InvalidValue, NotFound
from grading.jsontext import json_problem
from grading.models import Campaign
from grading.models.choices import EventType
from grading.services import allocation, exclusion, join_links, lifecycle, organizer
from grading.services.event_input import EventInput
from grading.services.events import event_record, events_record
from grading.services.qualification import rule_words
from grading.services.tokens import token_get_or_create

CAMPAIGN_PARAM = OpenApiParameter("campaign", OpenApiTypes.INT, required=True, description="Campaign id.")
ERRORS = {
    code: OpenApiResponse(s.ErrorOut, description=text)
    for code, text in [
        (400, "Invalid input; `field` and `value` name what was wrong."),
        (403, "Not allowed."),
        (404, "Not found."),
    ]
}


class TokenView(GradingAPIView):
    """Exchange a username and password for an API token (token auth for scripts)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [TokenThrottle]

    @extend_schema(request=s.TokenIn, responses={200: s.TokenOut, 400: s.ErrorOut}, auth=[])
    def post(self, request: Request) -> Response:
        data = validated(s.TokenIn, request.data)
        user = authenticate(request, username=data["username"], password=data["password"])
        if user is None or not user.is_active:
            raise InvalidValue("unable to log in with these credentials.", field="password", value=None)
        return Response({"token": token_get_or_create(user=user).key})


# --- campaigns ---------------------------------------------------------------------------------------
class CampaignListView(GradingAPIView, GenericAPIView):
    """`GET`: the campaigns I have a role in, with my progress. `POST`: create one (I organize it)."""

    serializer_class = s.CampaignOut
    queryset = Campaign.objects.none()

    @extend_schema(responses={200: s.CampaignOut(many=True)})
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(selectors.campaign_list_for_user(user=request.user))
        out = s.CampaignOut(page, many=True, context={"roles": selectors_organizer.user_roles(user=request.user)})
        return self.get_paginated_response(out.data)

    @extend_schema(request=s.CampaignIn, responses={201: s.CampaignOut, **ERRORS})
    def post(self, request: Request) -> Response:
        data = validated(s.CampaignIn, request.data)
        campaign = organizer.campaign_create_for(user=request.user, **data)
        return Response(_campaign_out(request, campaign.pk), status=status.HTTP_201_CREATED)


def _campaign_out(request: Request, campaign_id: int) -> dict[str, Any]:
    campaign = selectors.campaign_list_for_user(user=request.user).get(pk=campaign_id)
    return s.CampaignOut(campaign, context={"roles": selectors_organizer.user_roles(user=request.user)}).data


class CampaignDetailView(GradingAPIView):
    """One campaign: any member may read it; its organizers change or delete it."""

    @extend_schema(responses={200: s.CampaignOut, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_member(user=request.user, campaign_id=pk)
        return Response(_campaign_out(request, campaign.pk))

    @extend_schema(request=s.CampaignPatchIn, responses={200: s.CampaignOut, **ERRORS, 409: s.ErrorOut})
    def patch(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        data = validated(s.CampaignPatchIn, request.data)
        lifecycle.campaign_settings_update(campaign=campaign, actor=request.user, **data)  # the page's steps and locks
        return Response(_campaign_out(request, campaign.pk))

    @extend_schema(responses={204: None, **ERRORS, 409: s.ErrorOut})
    def delete(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        organizer.campaign_delete(campaign=campaign, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CampaignProgressView(GradingAPIView):
    """Organizers: progress per unit (per query for ordering campaigns) and per grader (pseudonyms)."""

    @extend_schema(responses={200: s.ProgressOut, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        return Response(selectors.campaign_progress(campaign=campaign))


class CampaignActivityView(GradingAPIView, GenericAPIView):
    """Organizers: the campaign's audit trail, newest first (who did what, when, before and after)."""

    serializer_class = s.AuditEntryOut
    queryset = Campaign.objects.none()

    @extend_schema(responses={200: s.AuditEntryOut(many=True), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        page = self.paginate_queryset(selectors_organizer.audit_entries_of(campaign=campaign))
        return self.get_paginated_response(s.AuditEntryOut(page, many=True).data)


class CampaignMembersView(GradingAPIView):
    """Organizers: give a user a role (grader or organizer) in the campaign."""

    @extend_schema(request=s.MemberIn, responses={201: s.MemberOut, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        data = validated(s.MemberIn, request.data)
        role = organizer.member_add(campaign=campaign, actor=request.user, **data)
        return Response({"role": role.role, "pseudonym": role.pseudonym}, status=status.HTTP_201_CREATED)


def _link_out(request: Request, link: Any) -> dict[str, Any]:
    n_participants = getattr(link, "n_participants", 0)
    closed = link.closed_reason(n_participants=n_participants, now=timezone.now())
    return {
        "id": link.pk,
        "url": request.build_absolute_uri(join_links.link_url_path(link)),
        "label": link.label,
        "completion_code": link.completion_code,
        "return_url": link.return_url,
        "max_participants": link.max_participants,
        "participants": n_participants,
        "units_per_participant": link.units_per_participant,
        "expires_at": link.expires_at,
        "consent_text": link.consent_text,
        "qualification": link.qualification,
        "qualification_words": rule_words(link.qualification, scheme=link.campaign.scheme),
        "qualified": getattr(link, "n_qualified", 0),
        "screened_out": getattr(link, "n_screened_out", 0),
        "pay_per_unit": link.pay_per_unit,
        "pay_per_hour": link.pay_per_hour,
        "currency": link.currency,
        "paused": link.paused,
        "taking_participants": closed is None,
        "closed_reason": closed,
    }


class CampaignJoinLinksView(GradingAPIView):
    """Organizers: the campaign's join links (crowd studies), and making one."""

    @extend_schema(responses={200: s.JoinLinkOut(many=True), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        links = selectors_organizer.join_links_of(campaign=campaign)
        return Response([s.JoinLinkOut(_link_out(request, link)).data for link in links])

    @extend_schema(request=s.JoinLinkIn, responses={201: s.JoinLinkOut, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        data = validated(s.JoinLinkIn, request.data)
        link = join_links.join_link_create(campaign=campaign, actor=request.user, **data)
        return Response(s.JoinLinkOut(_link_out(request, link)).data, status=status.HTTP_201_CREATED)


class CampaignJoinLinkView(GradingAPIView):
    """Organizers: pause a join link (nobody new joins) or reopen it; set or change its qualification."""

    @extend_schema(request=s.JoinLinkPatch, responses={200: s.JoinLinkOut, **ERRORS})
    def patch(self, request: Request, pk: int, link_id: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        link = selectors_organizer.join_link_get(campaign=campaign, link_id=link_id)
        if link is None:
            raise NotFound(f"join link {link_id} does not exist in campaign {pk}.", field="link", value=link_id)
        data = validated(s.JoinLinkPatch, request.data)
        join_links.join_link_update(link=link, actor=request.user, **data)
        link = selectors_organizer.join_link_get(campaign=campaign, link_id=link.pk)  # with its counts
        return Response(s.JoinLinkOut(_link_out(request, link)).data)


def _exclusion_out(role: Any) -> dict[str, Any]:
    return {
        "grader": role.pseudonym or str(role.user_id),
        "excluded": role.excluded_at is not None,
        "reason": role.exclusion_reason,
        "excluded_at": role.excluded_at,
        "automatic": role.exclusion_automatic,
        "thresholds_waived": role.auto_exclusion_waived_at is not None,
    }


class CampaignExclusionView(GradingAPIView):
    """Organizers: a grader's exclusion from the analysis (docs/api.md, "Excluding graders"). The
    grader is named by pseudonym or user id. POST excludes (with `reason`), DELETE includes again;
    both are audited, and neither deletes anything from the event log."""

    @extend_schema(responses={200: s.ExclusionOut, **ERRORS})
    def get(self, request: Request, pk: int, grader: str) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        return Response(
            s.ExclusionOut(_exclusion_out(exclusion.grader_role_find(campaign=campaign, grader=grader))).data
        )

    @extend_schema(request=s.ExclusionIn, responses={200: s.ExclusionOut, **ERRORS})
    def post(self, request: Request, pk: int, grader: str) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        role = exclusion.grader_role_find(campaign=campaign, grader=grader)
        data = validated(s.ExclusionIn, request.data)
        role = exclusion.grader_exclude(campaign=campaign, role=role, reason=data.get("reason", ""), actor=request.user)
        return Response(s.ExclusionOut(_exclusion_out(role)).data)

    @extend_schema(responses={200: s.ExclusionOut, **ERRORS})
    def delete(self, request: Request, pk: int, grader: str) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        role = exclusion.grader_role_find(campaign=campaign, grader=grader)
        role = exclusion.grader_include(campaign=campaign, role=role, actor=request.user)
        return Response(s.ExclusionOut(_exclusion_out(role)).data)


class CampaignAssignView(GradingAPIView):
    """Organizers: create the initial overlap (empty body), or assign units to one grader."""

    @extend_schema(request=s.AssignIn, responses={201: s.AssignOut, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        campaign = selectors.campaign_get_for_organizer(user=request.user, campaign_id=pk)
        data = validated(s.AssignIn, request.data)
        created = organizer.assignments_assign(campaign=campaign, actor=request.user, **data)
        return Response({"created": created}, status=status.HTTP_201_CREATED)


# --- a grader's work ---------------------------------------------------------------------------------
class AssignmentListView(GradingAPIView, GenericAPIView):
    """My assignments in a campaign, in my order, with what a grader may see of each unit."""

    serializer_class = s.AssignmentOut
    queryset = Campaign.objects.none()

    @extend_schema(parameters=[CAMPAIGN_PARAM], responses={200: s.AssignmentOut(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        campaign = selectors.campaign_get_for_grader(
            grader=request.user, campaign_id=request.query_params.get("campaign")
        )
        page = self.paginate_queryset(selectors.assignment_list_for_grader(grader=request.user, campaign=campaign))
        judgments = selectors.judgments_by_unit(grader=request.user, campaign=campaign)
        repeats = selectors.repeat_answers_of(assignments=page)
        return self.get_paginated_response(
            s.AssignmentOut(page, many=True, context={"judgments": judgments, "repeats": repeats}).data
        )


NO_MORE_REASON = OpenApiParameter(
    "Evalutron-Reason",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    response=[204],
    enum=list(allocation.REASONS),
    description="Why nothing is left: the budget is spent (budget_spent); the units that need another judgment "
    "have all had mine (already_judged); none needs one until other graders' open work is in (others_judging); "
    "the units that still disagree have the most graders allowed (max_overlap_reached); no unit needs "
    "another judgment (nothing_needed); or I am a crowd participant screened out by my join link's "
    "qualification (screened_out).",
)


class NextAssignmentView(GradingAPIView):
    """Take the assignment to work on next, leased to me; 204 when there is nothing left, with the
    reason in the `Evalutron-Reason` header. A POST: taking work leases or creates an assignment."""

    @extend_schema(request=s.NextIn, responses={200: s.AssignmentOut, 204: None, **ERRORS}, parameters=[NO_MORE_REASON])
    def post(self, request: Request) -> Response:
        data = validated(s.NextIn, request.data)
        campaign = selectors.campaign_get_for_grader(grader=request.user, campaign_id=data["campaign"])
        served = allocation.assignment_next_explained(grader=request.user, campaign=campaign)
        if served.assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT, headers={"Evalutron-Reason": served.reason})
        assignment, judgments = served.assignment, {}  # comes with its unit; a new one is not judged yet
        if not served.new:
            judgments = selectors.judgments_by_unit(
                grader=request.user, campaign=campaign, unit_ids=[assignment.unit_id]
            )
        repeats = selectors.repeat_answers_of(assignments=[assignment])
        return Response(s.AssignmentOut(assignment, context={"judgments": judgments, "repeats": repeats}).data)

    def http_method_not_allowed(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if request.method == "GET":  # the endpoint was a GET once: say what replaced it
            raise exceptions.MethodNotAllowed(
                "GET",
                detail="Taking work leases or creates an assignment, so it is a POST: "
                'POST /api/assignments/next/ with {"campaign": <id>}.',
            )
        return super().http_method_not_allowed(request, *args, **kwargs)


class JudgmentListView(GradingAPIView, GenericAPIView):
    """My current judgments in a campaign."""

    serializer_class = s.JudgmentOut
    queryset = Campaign.objects.none()

    @extend_schema(parameters=[CAMPAIGN_PARAM], responses={200: s.JudgmentOut(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        campaign = selectors.campaign_get_for_grader(
            grader=request.user, campaign_id=request.query_params.get("campaign")
        )
        page = self.paginate_queryset(selectors.judgment_list_for_grader(grader=request.user, campaign=campaign))
        return self.get_paginated_response(s.JudgmentOut(page, many=True).data)


def _event_input(data: dict[str, Any]) -> EventInput:
    return EventInput(
        id=data["id"],
        campaign_id=data["campaign"],
        type=data["type"],
        client_ts=data["client_ts"],
        payload=data["payload"],
        unit_id=data["unit"],
        query_id=data["query"],
        seq=data["seq"],
        session_id=data["session_id"],
    )


def _event_from(raw: Any) -> EventInput:
    """An event's input: the fast reading of a well-formed one, else the serializer's, which names
    what is wrong. A number the JSON standard lacks (NaN, Infinity) is named where it stands
    (`payload.value`), not as the whole payload."""
    fast = event_input_fast(raw)
    if fast is not None:
        return fast
    payload = raw.get("payload") if isinstance(raw, dict) else None
    problem = json_problem(payload, "payload") if isinstance(payload, dict) else None
    if problem is not None:
        raise InvalidValue(
            f"{problem[0]} must be a finite number or clean text, got {problem[1]}.", field=problem[0], value=problem[1]
        )
    return _event_input(validated(s.EventIn, raw))


def _record_one(user: Any, raw: Any) -> tuple[int, dict[str, Any]]:
    """Validate and record one event in its own transaction: (http status, result)."""
    event_id = str(raw.get("id")) if isinstance(raw, dict) and raw.get("id") is not None else None
    try:
        outcome = event_record(grader=user, data=_event_from(raw))
    except GradingError as exc:
        return exc.http_status, {"id": event_id, "status": "rejected", "error": error_body(exc)}
    code = status.HTTP_200_OK if outcome.replayed else status.HTTP_201_CREATED
    return code, outcome.as_dict()


class EventView(GradingAPIView):
    """Record one event or a list of them.

    A single event: 201 when stored, 200 when its id was seen before (the original result), 4xx
    when rejected (nothing stored). A list: each event in its own transaction; 200 with a per-event
    status (`stored`, `replayed`, `rejected` with its error), in the order sent. JSON only (415).
    """

    parser_classes = [TolerantJSONParser]

    @extend_schema(
        request=s.EventIn,  # and a list of them: grading.api.schema.event_batches
        responses={201: s.EventResult, 200: s.BatchResult, **ERRORS, 409: s.ErrorOut},
        description=f"One event, or a JSON list of 1 to {s.MAX_BATCH} events: the answer is then a BatchResult "
        "(200), each event stored, replayed or rejected on its own.",
    )
    def post(self, request: Request) -> Response:
        body = request.data
        if isinstance(body, list):
            return Response(self._batch(request.user, body))
        if not isinstance(body, dict):
            raise InvalidValue(
                "the body must be an event object or a list of events.", field="body", value=type(body).__name__
            )
        code, result = _record_one(request.user, body)
        return Response(result["error"] if result["status"] == "rejected" else result, status=code)

    @staticmethod
    def _batch(user: Any, events: list[Any]) -> dict[str, Any]:
        if not events:
            raise InvalidValue("the batch is empty: send at least one event.", field="body", value=0)
        if len(events) > s.MAX_BATCH:
            raise InvalidValue(
                f"a batch holds at most {s.MAX_BATCH} events, got {len(events)}.", field="body", value=len(events)
            )
        results: list[dict[str, Any] | None] = [None] * len(events)
        accepted: list[tuple[int, EventInput]] = []
        for index, raw in enumerate(events):
            try:
                accepted.append((index, _event_from(raw)))
            except GradingError as exc:
                results[index] = _rejected(index, raw, exc)
        # The valid events are recorded together: each accepted or rejected on its own, in order.
        outcomes = events_record(grader=user, items=[item for _, item in accepted])
        for (index, item), outcome in zip(accepted, outcomes, strict=True):
            if isinstance(outcome, GradingError):
                results[index] = _rejected(index, {"id": str(item.id)}, outcome)
            else:
                code = status.HTTP_200_OK if outcome.replayed else status.HTTP_201_CREATED
                results[index] = {"index": index, "http_status": code, **outcome.as_dict()}
        counts = {k: sum(r["status"] == k for r in results) for k in ("stored", "replayed", "rejected")}
        return {**counts, "results": results}


def _rejected(index: int, raw: Any, exc: GradingError) -> dict[str, Any]:
    event_id = str(raw.get("id")) if isinstance(raw, dict) and raw.get("id") is not None else None
    return {
        "index": index,
        "http_status": exc.http_status,
        "id": event_id,
        "status": "rejected",
        "error": error_body(exc),
    }


class OrderingView(GradingAPIView):
    """Submit a complete ordering of a query's candidates (candidate ids, first = most)."""

    @extend_schema(request=s.OrderingIn, responses={201: s.EventResult, 200: s.EventResult, **ERRORS})
    def post(self, request: Request) -> Response:
        data = validated(s.OrderingIn, request.data)
        event = EventInput(
            id=data.get("id") or uuid4(),
            campaign_id=data["campaign"],
            query_id=data["query"],
            type=EventType.ORDERING_SUBMITTED,
            payload={"items": data["items"]},
            client_ts=data.get("client_ts") or datetime.now(UTC),
            seq=data["seq"],
            session_id=data["session_id"],
        )
        try:
            outcome = event_record(grader=request.user, data=event)
        except GradingError as exc:
            if exc.field == "payload.items":
                exc.field = "items"
            raise
        return Response(outcome.as_dict(), status=status.HTTP_200_OK if outcome.replayed else status.HTTP_201_CREATED)
