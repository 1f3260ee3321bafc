"""The second WebDAV test server (not nginx): WsgiDAV under cheroot, started by contrib/test/servers.py.

    UPLOADD_TEST_DAV2_USER=U UPLOADD_TEST_DAV2_PASSWORD=P \\
        .build/venv/bin/python contrib/test/dav2_app.py --host 127.0.0.1 --port 0 --dir DIR

and read the line `listening on http://HOST:PORT` from stdout. It serves two shares, both behind
Basic auth (U and P; no Digest, no anonymous access), on plain RFC 4918 rules: a PUT whose parent
collection is missing gets 409 Conflict (no intermediate folders are made), MKCOL makes one
collection at a time (201; 409 without its parent, 405 where something already is), DELETE
answers 204, PROPFIND, COPY, MOVE, LOCK and PROPPATCH work (locks and dead properties in memory).

    /dav       the files of DIR/dav: a normal writable share
    /nomkcol   the files of DIR/nomkcol: the same, except that MKCOL is refused with 403 Forbidden,
               so only folders that exist on disk can take files

The password comes from the environment, not the command line where `ps` would show it. Requests
are logged to stdout, one line each, with the path inside its share (`PUT /a/f` for /dav/a/f; a
failed login names the share as its realm).
"""

import argparse
import os
import sys

from cheroot import wsgi
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError
from wsgidav.error_printer import ErrorPrinter
from wsgidav.fs_dav_provider import FilesystemProvider, FolderResource
from wsgidav.http_authenticator import HTTPAuthenticator
from wsgidav.request_resolver import RequestResolver
from wsgidav.wsgidav_app import WsgiDAVApp

FS_OPTS = {"shadow_map": {}, "follow_symlinks": False}


class NoMkcolFolder(FolderResource):
    def create_collection(self, name):
        raise DAVError(HTTP_FORBIDDEN, "MKCOL is disabled on this share (uploadd test server)")


class NoMkcolProvider(FilesystemProvider):
    """A writable share on which no collection can be created: MKCOL answers 403."""

    def get_resource_inst(self, path, environ):
        res = super().get_resource_inst(path, environ)
        if isinstance(res, FolderResource):
            return NoMkcolFolder(path, environ, res._file_path)
        return res


def make_app(d: str, user: str, password: str) -> WsgiDAVApp:
    return WsgiDAVApp({
        "provider_mapping": {
            "/dav": FilesystemProvider(os.path.join(d, "dav"), fs_opts=FS_OPTS),
            "/nomkcol": NoMkcolProvider(os.path.join(d, "nomkcol"), fs_opts=FS_OPTS),
        },
        "fs_dav_provider": FS_OPTS,
        # WsgiDAV's default stack less Cors and the HTML directory browser (which would add an
        # anonymous share of its own assets).
        "middleware_stack": [ErrorPrinter, HTTPAuthenticator, RequestResolver],
        "http_authenticator": {"domain_controller": None, "accept_basic": True, "accept_digest": False,
                               "default_to_digest": False, "trusted_auth_header": None},
        "simple_dc": {"user_mapping": {"*": {user: {"password": password}}}},
        "property_manager": True,
        "lock_storage": True,
        "verbose": 3,
        "logging": {"enable": True},
    })


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (default)")
    parser.add_argument("--dir", required=True, help="holds the shares' folders dav/ and nomkcol/ (made if missing)")
    args = parser.parse_args()
    user, password = os.environ.get("UPLOADD_TEST_DAV2_USER"), os.environ.get("UPLOADD_TEST_DAV2_PASSWORD")
    if not user or not password:
        print("dav2_app.py: set UPLOADD_TEST_DAV2_USER and UPLOADD_TEST_DAV2_PASSWORD", file=sys.stderr)
        return 2
    d = os.path.abspath(args.dir)
    for share in ("dav", "nomkcol"):
        os.makedirs(os.path.join(d, share), exist_ok=True)
    server = wsgi.Server((args.host, args.port), make_app(d, user, password), numthreads=16,
                         server_name="uploadd-test-dav2")
    server.prepare()  # binds: with --port 0 the kernel picks the port, read it back
    host, port = server.bind_addr[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
