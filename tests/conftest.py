import pytest

from tests import services


@pytest.fixture(autouse=True)
def _required_services(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("redis"):
        services.require_redis()
    if request.node.get_closest_marker("postgres"):
        request.getfixturevalue("db")
        services.require_postgres()
    if request.node.get_closest_marker("browser"):
        services.chromium_path()


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _forget_scheduled_runs() -> None:
    """Campaign ids repeat across tests (each test's database starts afresh): forget the process-local
    knowledge of queued automatic runs."""
    from analysis import scheduling

    scheduling._QUEUED_UNTIL.clear()
