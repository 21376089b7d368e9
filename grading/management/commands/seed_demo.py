from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from grading.services.demo import demo_logins, seed_demo


class Command(BaseCommand):
    help = "Create the demo users and campaigns with simulated judgments. Safe to run again: existing data is kept."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--print-logins", action="store_true", help="only print the demo logins")
        parser.add_argument("--no-simulate", action="store_true", help="create campaigns without simulated judgments")
        parser.add_argument("--seed", type=int, default=2006)

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["print_logins"]:
            self.stdout.write("  Demo logins (username / password):")
            for login in demo_logins():
                self.stdout.write(f"    {login.username:<10} {login.password:<22} {login.role}")
            return
        made = seed_demo(seed=opts["seed"], simulate=not opts["no_simulate"])
        if not made:
            self.stdout.write("Demo data already present; nothing to do.")
        for campaign in made:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created {campaign.name}: {campaign.units.count()} units, {campaign.events.count()} events, "
                    f"{campaign.judgments.count() + campaign.orderings.count()} judgments"
                )
            )
            if not opts["no_simulate"]:
                # So that the reports have results on first start (embedded: runs here; with a broker: queued).
                call_command("run_analysis", campaign.slug, stdout=self.stdout)
