"""The tus peer: uploads one file with tuspy (run with <repo>/.build/bench-venv/bin/python).

    tus_peer.py URL FILE CHUNK_SIZE

Sends `filename` and `filetype` metadata, as tuspyserver wants, in chunks of CHUNK_SIZE bytes.
"""

import os
import sys

from tusclient import client

url, path, chunk_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
uploader = client.TusClient(url).uploader(
    file_path=path, chunk_size=chunk_size,
    metadata={"filename": os.path.basename(path), "filetype": "application/octet-stream"})
uploader.upload()
print(uploader.url)
