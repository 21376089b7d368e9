from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"
    verbose_name = "Analysis"

    def ready(self) -> None:
        from django.core.signals import request_started

        from analysis.embedded import runner_ensure_started

        # Embedded (no broker): the first request starts the background runner of due analyses.
        request_started.connect(runner_ensure_started, dispatch_uid="analysis-embedded-runner")
