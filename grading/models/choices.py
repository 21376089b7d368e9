from django.db import models


class Scheme(models.TextChoices):
    BROAD_FINE = "broad_fine", "BROAD category and FINE score"
    NUMERIC = "numeric", "Numeric scale"
    CATEGORICAL = "categorical", "Categorical labels"
    ORDERING = "ordering", "Ordering of a query's candidates"
    PAIRWISE = "pairwise", "Pairwise comparison"


class Broad(models.TextChoices):
    NS = "NS", "Not Similar"
    SS = "SS", "Somewhat Similar"
    VS = "VS", "Very Similar"


class CampaignStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class Policy(models.TextChoices):
    FIXED = "fixed", "Fixed overlap"
    CONSENSUS = "consensus", "Until consensus"
    CONFUSABILITY = "confusability", "Most confusable first"
    QUERY_DEVIATION = "query_deviation", "Deviating queries"
    UNCERTAINTY = "uncertainty", "Most uncertain for this grader"


class Role(models.TextChoices):
    GRADER = "grader", "Grader"
    ORGANIZER = "organizer", "Organizer"


class MediaKind(models.TextChoices):
    TEXT = "text", "Text"
    AUDIO = "audio", "Audio"
    IMAGE = "image", "Image"
    VIDEO = "video", "Video"


class AssignmentStatus(models.TextChoices):
    OPEN = "open", "Open"
    DONE = "done", "Done"
    SKIPPED = "skipped", "Skipped"


class AssignmentSource(models.TextChoices):
    INITIAL = "initial", "Initial overlap"
    ADAPTIVE = "adaptive", "Adaptive allocation"
    MANUAL = "manual", "Assigned by an organizer"
    # A crowd participant's qualification units: gold units given before their share (docs/design.md §2).
    QUALIFY = "qualify", "Qualification (gold units given first)"


class EventType(models.TextChoices):
    UNIT_VIEWED = "unit_viewed"
    AUDITION = "audition"
    BROAD_SET = "broad_set"
    FINE_SET = "fine_set"
    SCORE_SET = "score_set"
    LABEL_SET = "label_set"
    PAIRWISE_SET = "pairwise_set"
    ORDERING_CHANGED = "ordering_changed"
    ORDERING_SUBMITTED = "ordering_submitted"
    COMMENT = "comment"
    SKIP = "skip"
    GUIDELINES_VIEWED = "guidelines_viewed"
    HINT_SHOWN = "hint_shown"
    SKIP_UNDONE = "skip_undone"
    PAGE_FOCUS = "page_focus"
    ADJUDICATED = "adjudicated"  # an organizer settles a unit's value (never a grader judgment)
    GOLD_SET = "gold_set"  # an organizer makes a unit gold, or changes its answer
    GOLD_REMOVED = "gold_removed"  # an organizer makes a gold unit ordinary again
    CONSENT_GIVEN = "consent_given"  # a crowd participant agreed to a join link's consent text


# Events an organizer records about a unit (docs/design.md §5.6, "Hidden units", "Adjudication").
# Graders cannot send them, and they are no grader's work: the statistics of graders' behaviour
# (stability, engagement, time on unit) leave them out, and they never start grading.
ORGANIZER_EVENTS = frozenset({EventType.ADJUDICATED, EventType.GOLD_SET, EventType.GOLD_REMOVED})
# Events the server records for a grader when they do something outside the grading pages (a crowd
# participant agrees to the consent text of a join link); graders cannot send them.
SERVER_EVENTS = frozenset({EventType.CONSENT_GIVEN})


class PairwiseVerdict(models.TextChoices):
    A = "A", "A is more"
    B = "B", "B is more"
    EQUAL = "equal", "Equal"


# FINE bands per BROAD category: a FINE outside its category's band earns a gentle hint.
DEFAULT_FINE_BANDS = {"NS": [0.0, 4.0], "SS": [3.0, 8.0], "VS": [6.0, 10.0]}
