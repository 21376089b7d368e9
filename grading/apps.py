from django.apps import AppConfig


class GradingConfig(AppConfig):
    name = "grading"
    verbose_name = "Grading"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save
        from rest_framework.authtoken.models import Token

        from grading.api.authentication import token_forget, user_forget

        # The API remembers valid tokens for a few seconds: forget them when they or their user change.
        for signal in (post_save, post_delete):
            signal.connect(token_forget, sender=Token, dispatch_uid=f"token_forget_{signal is post_save}")
            signal.connect(user_forget, sender=get_user_model(), dispatch_uid=f"user_forget_{signal is post_save}")
