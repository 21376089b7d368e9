from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0017_join_link_qualification"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaignrole",
            name="exclusion_automatic",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="campaignrole",
            name="auto_exclusion_waived_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
