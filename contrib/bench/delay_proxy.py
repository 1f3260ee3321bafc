"""A TCP proxy on loopback that delays every chunk by DELAY seconds each way: a long round trip
without a bandwidth limit (this machine has no netem). Bytes keep flowing while earlier ones wait,
as on a long link. `python3 delay_proxy.py TARGET_PORT DELAY` prints "ready PORT" once it listens."""
import asyncio
import sys

HOST = "127.0.0.1"


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copies reader to writer, each chunk `delay` seconds after it arrived; at most 4,096 chunks
    (256 MiB) wait at once."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue(maxsize=4096)

    async def send() -> None:
        while True:
            due, data = await queue.get()
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(1 << 16):
            await queue.put((loop.time() + delay, data))
        await queue.put((loop.time() + delay, b""))
        await sender
    except (ConnectionError, OSError):
        sender.cancel()


async def main(target: int, delay: float) -> None:
    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(HOST, target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay),
                             return_exceptions=True)
        for writer in (client_writer, server_writer):
            writer.close()

    server = await asyncio.start_server(handle, HOST, 0)
    print("ready", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
