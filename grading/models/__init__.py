"""The grading data model (docs/design.md §2)."""

from grading.models.allocation import (
    Adjudication,
    CampaignAllocation,
    GoldAnswer,
    QueryAllocation,
    RepeatAnswer,
    UnitAllocation,
)
from grading.models.audit import AuditEntry
from grading.models.campaigns import Campaign, CampaignRole, GuidelinesVersion
from grading.models.crowd import JoinLink, Participant, Platform
from grading.models.items import Candidate, CandidateProvenance, Query, System, SystemOutput, Unit
from grading.models.judgments import Assignment, GraderTally, GradingEvent, Judgment, Ordering

__all__ = [
    "Adjudication",
    "Assignment",
    "AuditEntry",
    "Campaign",
    "CampaignAllocation",
    "CampaignRole",
    "Candidate",
    "CandidateProvenance",
    "GoldAnswer",
    "GraderTally",
    "GradingEvent",
    "GuidelinesVersion",
    "JoinLink",
    "Judgment",
    "Ordering",
    "Participant",
    "Platform",
    "Query",
    "QueryAllocation",
    "RepeatAnswer",
    "System",
    "SystemOutput",
    "Unit",
    "UnitAllocation",
]
