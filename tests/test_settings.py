"""The settings module: strict production defaults, loud failures on bad configuration."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PRODUCTION = {
    "SECRET_KEY": "x7!k2#production-grade-secret-key-with-enough-entropy-9Qw3zLp0vR8tY6uI4oP",
    "ALLOWED_HOSTS": "evalutron.example.org",
    "DATABASE_URL": "postgres://evalutron@db.internal:5432/evalutron",
    "CELERY_BROKER_URL": "redis://redis.internal:6379/0",
}


def django(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_the_documented_production_environment():
    result = django(["check", "--deploy", "--fail-level", "WARNING"], PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off():
    result = django(["check"], {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"})
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("SECURE_HSTS_SECONDS", "a year", "SECURE_HSTS_SECONDS='a year' is not an integer"),
        ("DATABASE_URL", "mysql://x@y/z", "DATABASE_URL names engine"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL='LOUD' is not one of"),
    ],
)
def test_a_bad_value_fails_at_start_naming_the_variable(name, value, message):
    result = django(["check"], {**PRODUCTION, name: value})
    assert result.returncode != 0
    assert message in result.stderr


def test_with_debug_and_nothing_else_it_runs_embedded():
    result = django(
        [
            "shell",
            "--no-imports",
            "-c",
            "from django.conf import settings as s; print(s.DATABASES['default']['ENGINE'], "
            "s.CELERY_TASK_ALWAYS_EAGER)",
        ],
        {"DEBUG": "true"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True"]


def test_production_static_files_import_each_other_by_their_hashed_names(tmp_path):
    """A cached page never runs a new grading module with an old one: collectstatic rewrites the ES
    modules' imports to the hashed files it writes."""
    done = django(["collectstatic", "--no-input"], {**PRODUCTION, "STATIC_ROOT": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    scheme = [p for p in (tmp_path / "js" / "schemes").glob("broad_fine.*.js") if p.suffix == ".js"]
    assert len(scheme) == 1
    imports = [line for line in scheme[0].read_text().splitlines() if line.startswith("import ")]
    assert len(imports) == 3
    for line in imports:
        target = line.split('"')[1]
        assert re.fullmatch(r"\.\./\w+\.[0-9a-f]{12}\.js", target) and (scheme[0].parent / target).is_file(), line


def test_the_web_process_imports_its_views_and_keeps_them_from_the_garbage_collector():
    """evalutron/wsgi.py: what is alive once the application and its views are imported is frozen
    (gc.freeze), so that the collector does not walk it again on every full collection."""
    result = django(
        [
            "shell",
            "--no-imports",
            "-c",
            "import gc, sys; before = gc.get_freeze_count(); import evalutron.wsgi; "
            "print(before, gc.get_freeze_count() > 10_000, 'grading.api.views' in sys.modules)",
        ],
        PRODUCTION,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True", "True"]


def test_postgres_urls_use_the_backend_with_the_quiet_health_check():
    result = django(
        [
            "shell",
            "--no-imports",
            "-c",
            "from django.conf import settings as s; d = s.DATABASES['default']; "
            "print(d['ENGINE'], d['CONN_HEALTH_CHECKS'])",
        ],
        PRODUCTION,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["evalutron.postgres", "True"]
