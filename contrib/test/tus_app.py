"""The tus 1.0 test server: tuspyserver's router under uvicorn, started by contrib/test/servers.py.

    UPLOADD_TEST_TUS_DIR=DIR .build/venv/bin/python -m uvicorn --app-dir contrib/test tus_app:app

The creation endpoint is /files/. An upload whose Location ends in UID is stored as DIR/UID (its
bytes) and DIR/UID.info (JSON: metadata, size, offset, expires); DELETE removes both.
"""

import os

from fastapi import FastAPI
from tuspyserver import create_tus_router

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
app.include_router(create_tus_router(
    prefix="files",
    files_dir=os.environ["UPLOADD_TEST_TUS_DIR"],
    max_size=1 << 40,  # 1 TiB, far beyond any test
    days_to_keep=5,
))
