"""The WSGI application gunicorn serves.

Once the application and every view it routes to are imported, the objects made so far (modules,
classes, functions, settings: nearly all of a process's objects, and alive until it exits) are
moved out of the cyclic garbage collector's reach with gc.freeze(). Otherwise each full collection
walks all of them again, about a tenth of an event's CPU (docs/design.md §5.6, "Cost of an event").
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalutron.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 (imports every view now rather than at the first request)
gc.collect()
gc.freeze()
