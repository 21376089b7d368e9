"""Pages for the organizers of a campaign."""
