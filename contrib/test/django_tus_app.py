"""A Django project serving django-tus (PyPI django-tus), Django's settings at their defaults;
started by contrib/test/servers.py under Django's own server:

    UPLOADD_TEST_DJANGO_TUS_DIR=DIR DJANGO_SETTINGS_MODULE=django_tus_app PYTHONPATH=contrib/test \\
        .build/venv/bin/python -m django runserver 127.0.0.1:PORT --noreload

The creation endpoint is /files/. A finished upload is moved to DIR/files/STEM.0001.EXT (from its
`filename` metadata STEM.EXT; the first number not taken: django-tus's 'increment' naming);
unfinished ones are DIR/incoming/UID, and
their offsets live in Django's default cache (memory: a restart forgets them).

Changed from Django's defaults: only what a project needs to run at all (SECRET_KEY, ROOT_URLCONF,
ALLOWED_HOSTS for 127.0.0.1, the app and its two folders). So DATA_UPLOAD_MAX_MEMORY_SIZE stays
2.5 MiB: django-tus reads each PATCH through request.body, and Django answers a body over that with
400 (RequestDataTooBig), which is what a tus client sending 8 MiB chunks meets. No authentication
(django-tus has none of its own).
"""

import os

from django.urls import path

BASE = os.environ.get("UPLOADD_TEST_DJANGO_TUS_DIR", "/nonexistent")

SECRET_KEY = "uploadd-test-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = __name__
INSTALLED_APPS = ["django_tus"]
MIDDLEWARE: list[str] = []
USE_TZ = True
TUS_UPLOAD_DIR = os.path.join(BASE, "incoming")
TUS_DESTINATION_DIR = os.path.join(BASE, "files")
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"console": {"class": "logging.StreamHandler"}},
           "loggers": {"django": {"handlers": ["console"], "level": "INFO"}}}


def __getattr__(name):
    """urlpatterns, made when Django's URL resolver first asks (this module is the settings too, imported
    before the apps are ready)."""
    if name != "urlpatterns":
        raise AttributeError(name)
    from django_tus.views import TusUpload
    return [path("files/", TusUpload.as_view()), path("files/<uuid:resource_id>", TusUpload.as_view())]
