"""Site-wide pages: styled error pages with a way back, API docs served without internet, the
local .env that `make demo` writes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import make_user

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db


def test_404_and_403_are_pages_of_the_site_with_a_way_back(client, settings):
    settings.DEBUG = False
    client.force_login(make_user())
    missing = client.get("/no/such/page/")
    assert missing.status_code == 404
    html = missing.content.decode()
    assert "Not found" in html and 'href="/"' in html and "css/evalutron.css" in html and "Resolver404" not in html
    refused = client.get("/organize/new/")
    assert refused.status_code == 403 and "Not allowed" in refused.content.decode()


def test_500_is_a_page_of_the_site(settings):
    from django.template.loader import render_to_string

    html = render_to_string("500.html")
    assert "Something went wrong" in html and "Back to your campaigns" in html


def test_api_docs_load_everything_from_our_own_static_files(client):
    client.force_login(make_user())
    for path in ("/api/docs/", "/api/redoc/"):
        html = client.get(path).content.decode()
        sources = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert sources, path
        assert not [s for s in sources if s.startswith(("http:", "https:", "//"))], (path, sources)
        assert any("drf_spectacular_sidecar" in s for s in sources), (path, sources)
    assert "<script>" not in client.get("/api/docs/").content.decode()  # the UI's script is a file


def test_management_commands_read_a_local_env_file(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("DEBUG=true\n")
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    ran = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "EVALUTRON_ENV_FILE": str(env_file)},
    )
    assert ran.returncode == 0, ran.stderr
    without = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "EVALUTRON_ENV_FILE": str(tmp_path / "missing")},
    )
    assert "SECRET_KEY is required" in without.stderr


def test_gitignore_keeps_the_env_file_out():
    assert ".env" in (ROOT / ".gitignore").read_text().split()
