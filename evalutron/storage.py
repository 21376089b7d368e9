"""Static files in production: WhiteNoise's compressed, hashed copies, with the imports between the
grading pages' ES modules (static/js/) rewritten to the hashed names too, so that a page never
mixes a new module with an old one from a cache."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
